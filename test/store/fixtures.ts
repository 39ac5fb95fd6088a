import { randomBytes } from 'node:crypto';
import type { ConnectorName } from '../../shared/connectors';
import type { Account, Connection, Conversation } from '../../shared/store/items';
import { LocalDataKeySource } from '../../shared/vault/local-data-key-source';
import type { SealedCredentials } from '../../shared/vault/sealed-credentials';
import { Vault } from '../../shared/vault/vault';

export const at = (iso: string) => new Date(iso).toISOString();

export function testVault(): Vault {
  return new Vault({ keySource: new LocalDataKeySource({ keyId: 'local-test', key: randomBytes(32) }), cacheTtlSeconds: 0 });
}

export function account(accountId: string, overrides: Partial<Account> = {}): Account {
  return {
    accountId,
    name: `Account ${accountId}`,
    integrationsEnabled: false,
    createdAt: at('2025-01-01T00:00:00Z'),
    updatedAt: at('2025-01-01T00:00:00Z'),
    ...overrides,
  };
}

export async function connection(
  accountId: string,
  connector: ConnectorName,
  overrides: Partial<Connection> = {},
  credentials: SealedCredentials | undefined = undefined,
): Promise<Connection> {
  const sealed =
    credentials ?? (await testVault().seal({ accountId, connector }, { apiKey: `test_${randomBytes(12).toString('hex')}` }));
  return {
    accountId,
    connector,
    config: { siteName: 'acme-test', environment: 'test' },
    credentials: sealed,
    maskedSecrets: { apiKey: '••••abcd' },
    syncSettings: { dataObjects: ['customers', 'subscriptions'], frequency: 'hourly', method: 'both' },
    health: { state: 'unknown' },
    createdAt: at('2025-01-02T00:00:00Z'),
    updatedAt: at('2025-01-02T00:00:00Z'),
    version: 0,
    ...overrides,
  };
}

export function conversation(accountId: string, conversationId: string, overrides: Partial<Conversation> = {}): Conversation {
  return {
    accountId,
    conversationId,
    state: 'active',
    pollerShard: 3,
    startedAt: at('2025-02-01T10:00:00Z'),
    updatedAt: at('2025-02-01T10:00:00Z'),
    version: 0,
    ...overrides,
  };
}
