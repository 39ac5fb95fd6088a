import * as z from 'zod/mini';
import { AccountId, ConnectorName } from '../connectors';

export const ConnectionHealth = z
  .object({
    state: z.enum(['unknown', 'healthy', 'degraded', 'needs_reconnect']),
    checkedAt: z.optional(z.iso.datetime()),
    reason: z.optional(z.string()),
    remedy: z.optional(z.string()),
  })
  .register(z.globalRegistry, { id: 'ConnectionHealth' });
export type ConnectionHealth = z.infer<typeof ConnectionHealth>;

/** A connection as the API returns it: config and masked secrets, never a secret. */
export const ConnectionView = z
  .object({
    accountId: AccountId,
    connector: ConnectorName,
    config: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()])),
    maskedSecrets: z.record(z.string(), z.string()).check(z.describe('Each stored secret as its last four characters')),
    syncSettings: z.record(z.string(), z.unknown()),
    health: ConnectionHealth,
    warnings: z.optional(z.array(z.string())),
    firstSync: z
      .optional(z.object({ enqueued: z.number().check(z.int()) }))
      .check(z.describe('Set by Connect Account when its test passed: the sync jobs it started, one per data object')),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .register(z.globalRegistry, { id: 'Connection' });
export type ConnectionView = z.infer<typeof ConnectionView>;
