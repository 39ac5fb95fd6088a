import * as z from 'zod/mini';
import { problems } from '../api/problem';
import { maskSecret } from '../connections/connector-definition';
import { requireIntegrationsEnabled } from '../tenants/account-guard';
import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { VersionConflictError } from '../store/store';
import { WEBHOOK_PASSWORD, WEBHOOK_USERNAME, newWebhookCredentials } from '../webhooks/basic-credentials';
import { sealWebhookSecret } from '../webhooks/webhook-secret';
import { billingWebhookReceiver } from './webhook-receiver';
import * as store from '../store/store';

export const BillingWebhookCredentials = z
  .object({
    url: z.string().check(z.describe('The webhook address to enter on the billing platform')),
    username: z.string(),
    password: z.string().check(z.describe('Shown this once: enter it on the billing platform now')),
  })
  .register(z.globalRegistry, { id: 'BillingWebhookCredentials' });
export type BillingWebhookCredentials = z.infer<typeof BillingWebhookCredentials>;

/** Concurrent edits of the connection (a settings save, a health update) are rare; a few tries settle them. */
const ATTEMPTS = 3;

/**
 * Makes new Basic credentials for the account's billing webhooks and adds them to the billing
 * connection's sealed credentials (open, add, seal, store under the version read). Earlier
 * credentials stop working: the user enters these on the billing platform at once. The password
 * is returned here only; afterwards the dashboard shows it masked.
 */
export async function createBillingWebhookCredentials(gateway: Gateway, log: Logger, accountId: string, url: string): Promise<BillingWebhookCredentials> {
  await requireIntegrationsEnabled(gateway, accountId);
  const scope = { accountId, connector: 'billing' } as const;
  const fresh = newWebhookCredentials(accountId);
  for (let attempt = 1; ; attempt += 1) {
    const connection = await store.getConnection(gateway.table, accountId, 'billing');
    if (!connection) throw problems.notFound(`The billing connector is not connected for account ${accountId}: connect it first.`);
    const credentials = await gateway.vault.open(scope, connection.credentials);
    const withWebhook = { ...credentials, [WEBHOOK_USERNAME]: fresh.username, [WEBHOOK_PASSWORD]: fresh.password };
    const sealed = await gateway.vault.seal(scope, withWebhook);
    // The receiver verifies with these alone, sealed apart (shared/webhooks/webhook-secret.ts).
    const webhookSecret = await sealWebhookSecret(gateway, scope, withWebhook, billingWebhookReceiver.secretFields);
    try {
      await store.putConnection(gateway.table, {
        ...connection,
        credentials: sealed,
        ...(webhookSecret ? { webhookSecret } : {}),
        config: { ...connection.config, webhookUsername: fresh.username },
        maskedSecrets: { ...connection.maskedSecrets, [WEBHOOK_PASSWORD]: maskSecret(fresh.password) },
        updatedAt: new Date(gateway.now()).toISOString(),
      });
      break;
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= ATTEMPTS) throw error;
    }
  }
  log.info('billing webhook credentials created', { accountId });
  return { url, username: fresh.username, password: fresh.password };
}
