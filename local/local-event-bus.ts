import type { EventPublisher, GatewayEvent } from '../shared/events/gateway-event';
import { redact } from '../shared/log/redaction';

/** The local stand-in for the EventBridge bus: keeps the latest events for the recent-events feed. */
export class LocalEventBus implements EventPublisher {
  private readonly recentEvents: GatewayEvent[] = [];
  private readonly listeners = new Set<(event: GatewayEvent) => void>();

  constructor(private readonly keep = 500) {}

  async publish(events: GatewayEvent[]): Promise<void> {
    for (const event of events) {
      const safe = redact(event) as GatewayEvent;
      this.recentEvents.push(safe);
      if (this.recentEvents.length > this.keep) this.recentEvents.shift();
      for (const listener of this.listeners) listener(safe);
    }
  }

  recent(accountId?: string): GatewayEvent[] {
    return this.recentEvents.filter((event) => !accountId || event.accountId === accountId);
  }

  subscribe(listener: (event: GatewayEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
