import * as z from 'zod/mini';
import { AccountId, ConnectorName } from '../connectors';

/**
 * A normalised event the gateway publishes for playbooks (EventBridge detail). The envelope is
 * versioned; each event type's `data` is documented in docs/events.md.
 */
export const GatewayEvent = z
  .object({
    schemaVersion: z.literal('1'),
    /** Unique per event; consumers dedupe on it. */
    id: z.string(),
    type: z.string().check(z.regex(/^[a-z]+(\.[a-z_]+)+$/, 'dotted lower-case, e.g. subscription.cancelled')),
    accountId: AccountId,
    source: ConnectorName,
    occurredAt: z.iso.datetime(),
    data: z.record(z.string(), z.unknown()),
  })
  .register(z.globalRegistry, { id: 'GatewayEvent' });
export type GatewayEvent = z.infer<typeof GatewayEvent>;

export interface EventPublisher {
  publish(events: GatewayEvent[]): Promise<void>;
  /**
   * The latest events kept in memory, oldest first: the local bus's recent-events feed. Absent on
   * EventBridge, where rules and the archive serve that purpose.
   */
  recent?(accountId?: string): GatewayEvent[];
}
