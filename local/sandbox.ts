import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { startBillingSimulator } from '../sandbox/billing-simulator';
import { startCrmSimulator } from '../sandbox/crm-simulator';
import { startPaymentSimulator } from '../sandbox/payment-simulator';
import type { RunningSimulator } from '../sandbox/simulator-server';

/** The sandbox's own keys: made once per data folder, so connections made earlier keep working after a restart. */
const SandboxKeys = z.object({
  paymentRestrictedKey: z.string(),
  paymentSecretKey: z.string(),
  billingSite: z.string(),
  billingReadOnlyKey: z.string(),
  messagingClientId: z.string(),
  messagingClientSecret: z.string(),
  messagingUsername: z.string(),
  messagingPlatformKey: z.string(),
});
type SandboxKeys = z.infer<typeof SandboxKeys>;

export interface RunningSandbox {
  env: Record<string, string>;
  summary: string[];
  stop(): Promise<void>;
}

const SEED = { customers: 200 } as const;

function sandboxKeys(dataDir: string): SandboxKeys {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'sandbox-keys.json');
  const token = () => randomBytes(18).toString('base64url').replace(/[-_]/g, 'x');
  // Keys made by an older version are kept; only the ones it did not make are added.
  const existing = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
  const keys: SandboxKeys = {
    paymentRestrictedKey: `rk_test_${token()}`,
    paymentSecretKey: `sk_test_${token()}`,
    billingSite: 'acme-test',
    billingReadOnlyKey: `test_${token()}`,
    messagingClientId: `3MVG9${token()}`,
    messagingClientSecret: token(),
    messagingUsername: 'messaging@acme.example',
    messagingPlatformKey: `mpk-${token().slice(0, 16)}`,
    ...SandboxKeys.partial().catch({}).parse(existing),
  };
  writeFileSync(path, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  return keys;
}

/**
 * Starts the simulators for every platform whose real address is not configured, seeded with a
 * small, repeatable data set, and returns the environment that points the gateway at them.
 */
/** Simulators listen next to the gateway: PORT+1 payment, PORT+2 billing, PORT+3 data and messaging. */
export async function startSandbox(env: NodeJS.ProcessEnv, dataDir: string, gatewayPort: number): Promise<RunningSandbox> {
  const running: RunningSimulator[] = [];
  const out: Record<string, string> = {};
  const summary: string[] = [];
  const keys = sandboxKeys(dataDir);
  const keysFile = join(dataDir, 'sandbox-keys.json');

  if (!env.PAYMENT_API_BASE_URL) {
    const payment = await startPaymentSimulator({ seed: 1, port: gatewayPort + 1 });
    payment.addApiKey(keys.paymentRestrictedKey, { access: 'read' });
    payment.addApiKey(keys.paymentSecretKey, { access: 'write' });
    payment.seedCustomers(SEED.customers);
    payment.seedSubscriptions();
    payment.seedInvoices();
    running.push(payment);
    out.PAYMENT_API_BASE_URL = payment.url;
    summary.push(`  payment platform   ${payment.url}   (${SEED.customers} customers)`);
  }
  if (!env.BILLING_BASE_URL_TEMPLATE) {
    const billing = await startBillingSimulator({ seed: 1, port: gatewayPort + 2 });
    const site = billing.addSite(keys.billingSite);
    billing.addApiKey(keys.billingSite, keys.billingReadOnlyKey, { type: 'read-only' });
    site.seedCustomers(SEED.customers);
    site.seedSubscriptions();
    site.seedInvoices();
    running.push(billing);
    out.BILLING_BASE_URL_TEMPLATE = `${billing.url}/sites/{site}`;
    summary.push(`  billing platform   ${billing.url}   (site "${keys.billingSite}", ${SEED.customers} customers)`);
  }
  if (!env.DATA_LOGIN_URL) {
    const crm = await startCrmSimulator({ echoAgent: true, port: gatewayPort + 3 });
    running.push(crm);
    // The messaging connector's sandbox org: a connected app whose certificate matches the key in
    // sandbox-messaging.pem, an approved integration user with the Messaging User license, a channel.
    const keyPath = join(dataDir, 'sandbox-messaging.pem');
    if (!existsSync(keyPath)) writeFileSync(keyPath, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
    crm.identity.registerConnectedApp({
      clientId: keys.messagingClientId,
      clientSecret: keys.messagingClientSecret,
      publicKey: createPublicKey(readFileSync(keyPath, 'utf8')),
      callbackUrl: `http://localhost:${gatewayPort}/auth/crmmessaging/callback`,
      scopes: ['api', 'refresh_token', 'offline_access'],
      approvedUsers: [keys.messagingUsername],
    });
    crm.identity.registerUser({ username: keys.messagingUsername, hasMessagingUserLicense: true });
    crm.messaging.registerMessagingChannel(keys.messagingPlatformKey);
    out.DATA_LOGIN_URL = crm.url;
    out.DATA_SANDBOX_LOGIN_URL = crm.url;
    summary.push(`  data + messaging   ${crm.url}   (identity, data platform and conversation APIs on one host; messaging key: ${keyPath})`);
  }
  if (running.length > 0) {
    out.ALLOW_INSECURE_PLATFORM_URLS = 'true';
    summary.unshift('Sandbox platforms (simulators on loopback; faults: POST <address>/__sandbox/faults):');
    summary.push(`  sandbox keys to connect with: ${keysFile}`);
  } else {
    summary.push('Sandbox: off (every platform address is configured).');
  }
  return {
    env: out,
    summary,
    async stop() {
      await Promise.all(running.map((simulator) => simulator.stop()));
    },
  };
}
