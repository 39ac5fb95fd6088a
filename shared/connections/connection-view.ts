import * as z from 'zod';
import { AccountId, ConnectorName } from '../connectors';

export const ConnectionHealth = z
  .object({
    state: z.enum(['unknown', 'healthy', 'degraded', 'needs_reconnect']),
    checkedAt: z.iso.datetime().optional(),
    reason: z.string().optional(),
    remedy: z.string().optional(),
  })
  .meta({ id: 'ConnectionHealth' });
export type ConnectionHealth = z.infer<typeof ConnectionHealth>;

/** A connection as the API returns it: config and masked secrets, never a secret. */
export const ConnectionView = z
  .object({
    accountId: AccountId,
    connector: ConnectorName,
    config: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()])),
    maskedSecrets: z.record(z.string(), z.string()).describe('Each stored secret as its last four characters'),
    syncSettings: z.record(z.string(), z.unknown()),
    health: ConnectionHealth,
    warnings: z.array(z.string()).optional(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Connection' });
export type ConnectionView = z.infer<typeof ConnectionView>;
