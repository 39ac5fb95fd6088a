import { problems } from '../api/problem';
import type { Gateway } from '../gateway';

/** Integrations are switched on per account by the operator; until then nothing can connect. */
export async function requireIntegrationsEnabled(gateway: Gateway, accountId: string): Promise<void> {
  const account = await gateway.store.getAccount(accountId);
  if (!account) throw problems.notFound(`No account ${accountId}.`);
  if (!account.integrationsEnabled) throw problems.integrationsDisabled();
}
