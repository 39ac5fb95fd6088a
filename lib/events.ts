import { Duration, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import { Construct } from 'constructs';

/**
 * The bus where the gateway publishes normalised events (subscription.cancelled, payment.failed,
 * message.received, ...) for the playbooks. Archived so a playbook that missed events can replay them.
 */
export class GatewayEvents extends Construct {
  readonly bus: events.EventBus;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bus = new events.EventBus(this, 'Bus', { eventBusName: 'integration-gateway' });
    this.bus.archive('Archive', {
      description: 'Every normalised gateway event, kept 30 days for replay',
      // An archive needs a pattern; every event on this bus comes from this account.
      eventPattern: { account: [Stack.of(this).account] },
      retention: Duration.days(30),
    });
  }
}
