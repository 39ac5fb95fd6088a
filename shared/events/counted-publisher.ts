import { recordMetric } from '../metrics/gateway-metrics';
import type { EventPublisher, GatewayEvent } from './gateway-event';

/** The same publisher, counting what it published (EventsPublished, by connector) once the bus took it. */
export function countedPublisher<P extends EventPublisher>(publisher: P): P {
  const publish = async (events: GatewayEvent[]): Promise<void> => {
    await publisher.publish(events);
    const byConnector = new Map<GatewayEvent['source'], number>();
    for (const event of events) byConnector.set(event.source, (byConnector.get(event.source) ?? 0) + 1);
    for (const [connector, count] of byConnector) recordMetric.eventsPublished(connector, count);
  };
  return new Proxy(publisher, { get: (target, property, receiver) => (property === 'publish' ? publish : Reflect.get(target, property, receiver)) });
}
