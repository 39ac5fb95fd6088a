import { randomBytes } from 'node:crypto';
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
});
type SandboxKeys = z.infer<typeof SandboxKeys>;

export interface RunningSandbox {
  env: Record<string, string>;
  summary: string[];
  stop(): Promise<void>;
}

const SEED = { customers: 200 } as const;

/** `SANDBOX_LATENCY_MS` and `SANDBOX_JITTER_MS`, whole milliseconds. */
const SandboxLatency = z.object({ ms: z.coerce.number().int().min(0).max(60_000), jitterMs: z.coerce.number().int().min(0).max(60_000) });

function sandboxKeys(dataDir: string): SandboxKeys {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'sandbox-keys.json');
  if (existsSync(path)) {
    const parsed = SandboxKeys.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (parsed.success) return parsed.data;
  }
  const token = () => randomBytes(18).toString('base64url').replace(/[-_]/g, 'x');
  const keys: SandboxKeys = {
    paymentRestrictedKey: `rk_test_${token()}`,
    paymentSecretKey: `sk_test_${token()}`,
    billingSite: 'acme-test',
    billingReadOnlyKey: `test_${token()}`,
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
  // How long the payment and billing simulators take to answer (a real list call: 200-600 ms).
  const latency = SandboxLatency.parse({ ms: env.SANDBOX_LATENCY_MS ?? 0, jitterMs: env.SANDBOX_JITTER_MS ?? 0 });
  const out: Record<string, string> = {};
  const summary: string[] = [];
  const keys = sandboxKeys(dataDir);
  const keysFile = join(dataDir, 'sandbox-keys.json');

  if (!env.PAYMENT_API_BASE_URL) {
    const payment = await startPaymentSimulator({ seed: 1, port: gatewayPort + 1, latency });
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
    const billing = await startBillingSimulator({ seed: 1, port: gatewayPort + 2, latency });
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
    out.DATA_LOGIN_URL = crm.url;
    out.DATA_SANDBOX_LOGIN_URL = crm.url;
    summary.push(`  data + messaging   ${crm.url}   (identity, data platform and conversation APIs on one host)`);
  }
  if (running.length > 0) {
    out.ALLOW_INSECURE_PLATFORM_URLS = 'true';
    summary.unshift('Sandbox platforms (simulators on loopback; faults: POST <address>/__sandbox/faults; answer time: POST <address>/__sandbox/latency):');
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
