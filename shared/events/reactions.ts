import type { GatewayEnvironment } from '../config';
import { gateway, type Gateway } from '../gateway';
import { log as rootLogger, type Logger } from '../log/logger';
import type { EventPublisher, GatewayEvent } from './gateway-event';

/**
 * Connectors may react to events the gateway publishes, including other connectors' (the data
 * connector turns the messaging connector's `conversation.ended` into an engagement event). The
 * core names no connector: a connector lists its reactions by event type, the registry gathers
 * them, and the publishing path runs them after the events are on the bus.
 *
 * A reaction that fails makes `publish` fail, so the publishing worker's message is retried:
 * events are then published again (consumers dedupe on the event id) and reactions must be
 * idempotent (the data connector's engagement event takes the gateway event's id).
 */
export type EventReaction = (event: GatewayEvent, context: { gateway: Gateway; log: Logger }) => Promise<void>;
export type EventReactions = Readonly<Record<string, EventReaction>>;

/** A publisher that runs the reactions to each event after publishing it. */
export function reactingPublisher(
  inner: EventPublisher,
  reactionsTo: (eventType: string) => readonly EventReaction[],
  gateway: () => Gateway,
  log: Logger = rootLogger,
): EventPublisher {
  return {
    async publish(events) {
      await inner.publish(events);
      for (const event of events) {
        for (const reaction of reactionsTo(event.type)) {
          await reaction(event, { gateway: gateway(), log: log.with({ accountId: event.accountId, eventType: event.type, eventId: event.id }) });
        }
      }
    },
    ...(inner.recent ? { recent: inner.recent.bind(inner) } : {}),
  };
}

/**
 * What a handler whose events connectors may react to provides as its bus
 * (`provideAwsServices({ events: withReactions(eventBridgeEvents, reactionsTo) })`): the bus, with
 * the reactions run after each publish on this process's gateway.
 */
export function withReactions(
  bus: (env: GatewayEnvironment) => EventPublisher,
  reactionsTo: (eventType: string) => readonly EventReaction[],
): (env: GatewayEnvironment) => EventPublisher {
  return (env) => reactingPublisher(bus(env), reactionsTo, gateway);
}
