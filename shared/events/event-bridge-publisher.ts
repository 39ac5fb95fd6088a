import type { PutEventsResponse } from '@aws-sdk/client-eventbridge';
import { EVENTBRIDGE, signedCall } from '../aws/signed-call';
import { redact } from '../log/redaction';
import type { GatewayEnvironment } from '../config';
import type { EventPublisher, GatewayEvent } from './gateway-event';

/** PutEvents takes at most 10 entries per call. */
const PUT_EVENTS_BATCH = 10;

/**
 * The gateway's bus on EventBridge: PutEvents as a signed call (shared/aws/signed-call.ts says why
 * no SDK client), in the shapes of the EventBridge API reference; test/aws/signed-services.test.ts holds
 * the request to the SDK's.
 */
export class EventBridgePublisher implements EventPublisher {
  constructor(private readonly busName: string) {}

  async publish(events: GatewayEvent[]): Promise<void> {
    for (let start = 0; start < events.length; start += PUT_EVENTS_BATCH) {
      const batch = events.slice(start, start + PUT_EVENTS_BATCH);
      const request = {
        Entries: batch.map((event) => ({
          EventBusName: this.busName,
          Source: `integration-gateway.${event.source}`,
          DetailType: event.type,
          // Events reach playbooks outside the gateway: the redaction step runs here too.
          Detail: JSON.stringify(redact(event)),
          // A timestamp in the JSON protocols: seconds since the epoch.
          Time: Date.parse(event.occurredAt) / 1000,
        })),
      };
      const result = await signedCall<PutEventsResponse>(EVENTBRIDGE, 'PutEvents', request);
      if ((result.FailedEntryCount ?? 0) > 0) {
        throw new Error(`EventBridge refused ${result.FailedEntryCount} of ${batch.length} event(s)`);
      }
    }
  }
}

/** The gateway's bus, for `provideAwsServices({ events: eventBridgeEvents })`. */
export function eventBridgeEvents(env: GatewayEnvironment): EventPublisher {
  if (!env.EVENT_BUS_NAME) throw new Error('EVENT_BUS_NAME is not set for this function');
  return new EventBridgePublisher(env.EVENT_BUS_NAME);
}
