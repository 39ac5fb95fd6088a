import * as z from 'zod/mini';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { problems } from '../api/problem';
import type { Connector } from './connector';
import { ConnectionHealth } from './connection-view';
import * as store from '../store/store';

export const TestConnectionResult = z
  .object({
    ok: z.boolean(),
    health: ConnectionHealth,
    platformMessage: z.optional(z.string()).check(z.describe('What the platform itself said, when it refused')),
  })
  .register(z.globalRegistry, { id: 'TestConnectionResult' });
export type TestConnectionResult = z.infer<typeof TestConnectionResult>;

/**
 * Test Connection: one cheap authenticated read through the connection's own client (the same
 * rate budget as its syncs). The outcome becomes the connection's health: healthy, degraded
 * (transient: rate limits, outages) or needs reconnect (the key, site or permissions are wrong).
 */
export async function testConnection(
  gateway: Gateway,
  accountId: string,
  check: Pick<Connector, 'name' | 'testConnection' | 'problem'>,
  log: Logger,
): Promise<TestConnectionResult> {
  const connector = check.name;
  const connection = await store.getConnection(gateway.table, accountId, connector);
  if (!connection) throw problems.notFound(`The ${connector} connector is not connected for account ${accountId}.`);
  const checkedAt = new Date(gateway.now()).toISOString();
  let result: TestConnectionResult;
  try {
    const credentials = await gateway.vault.open({ accountId, connector }, connection.credentials);
    await check.testConnection({ accountId, env: gateway.env, config: connection.config, credentials, rateBuckets: store.rateBucketsIn(gateway.table) });
    result = { ok: true, health: { state: 'healthy', checkedAt } };
  } catch (error) {
    const problem = check.problem(error);
    result = {
      ok: false,
      health: { state: problem.health, checkedAt, reason: problem.reason, remedy: problem.remedy },
      ...(problem.platformMessage ? { platformMessage: problem.platformMessage } : {}),
    };
  }
  await store.updateConnectionHealth(gateway.table, accountId, connector, result.health);
  log.info('connection tested', { connector, ok: result.ok, health: result.health.state });
  return result;
}
