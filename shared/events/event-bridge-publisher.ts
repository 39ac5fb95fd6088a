import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { redact } from '../log/redaction';
import { tracedAwsClient } from '../tracing/segments';
import type { GatewayEnvironment } from '../config';
import type { EventPublisher, GatewayEvent } from './gateway-event';

/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_BATCH = 10;

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {}

  async publish(events: GatewayEvent[]): Promise<void> {
    for (let start = 0; start < events.length; start += PUT_EVENTS_BATCH) {
      const batch = events.slice(start, start + PUT_EVENTS_BATCH);
      const result = await this.client.send(
        new PutEventsCommand({
          Entries: batch.map((event) => ({
            EventBusName: this.busName,
            Source: `integration-gateway.${event.source}`,
            DetailType: event.type,
            // Events reach playbooks outside the gateway: the redaction step runs here too.
            Detail: JSON.stringify(redact(event)),
            Time: new Date(event.occurredAt),
          })),
        }),
      );
      if ((result.FailedEntryCount ?? 0) > 0) {
        throw new Error(`EventBridge refused ${result.FailedEntryCount} of ${batch.length} event(s)`);
      }
    }
  }
}

/** The gateway's bus, for `provideAwsServices({ events: eventBridgeEvents })`. */
export function eventBridgeEvents(env: GatewayEnvironment): EventPublisher {
  if (!env.EVENT_BUS_NAME) throw new Error('EVENT_BUS_NAME is not set for this function');
  return new EventBridgePublisher(tracedAwsClient(new EventBridgeClient({})), env.EVENT_BUS_NAME);
}
