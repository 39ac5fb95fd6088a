import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as z from 'zod';
import { startBillingSimulator, type BillingSimulator } from '../sandbox/billing-simulator';
import { startCrmSimulator, type RunningCrmSimulator } from '../sandbox/crm-simulator';
import type { IdentityService, UserRegistration } from '../sandbox/identity-simulator';
import { startPaymentSimulator, type PaymentSimulator } from '../sandbox/payment-simulator';
import type { RunningSimulator } from '../sandbox/simulator-server';
import { openDataFolder } from './data-folder';

/**
 * An OAuth client of the CRM's identity service (a connected app) with its integration user and
 * key pair, as an admin would set one up for the gateway. The simulator keeps nothing between
 * starts, so the sandbox registers it again at every start with the same ids and key: connections
 * made earlier keep working after a restart.
 */
const SandboxIdentityClient = z.object({
  clientId: z.string(),
  clientSecret: z.string(),
  username: z.string(),
  /** The private key's PEM file (in LOCAL_DATA_DIR, never in the repository); its certificate is "uploaded" to the client. */
  privateKeyFile: z.string(),
});
export type SandboxIdentityClient = z.infer<typeof SandboxIdentityClient>;

/** The sandbox's own keys: made once per data folder, so connections made earlier keep working after a restart. */
const SandboxKeys = z.object({
  paymentRestrictedKey: z.string(),
  paymentSecretKey: z.string(),
  billingSite: z.string(),
  billingReadOnlyKey: z.string(),
  /** The data connector's form: these, with Login URL `production` and API Region `US`. */
  data: SandboxIdentityClient.extend({ loginUrl: z.literal('production'), apiRegion: z.literal('US') }).optional(),
  /** The messaging connector's form (JWT bearer: the private key file's content is its Certificate). */
  messaging: SandboxIdentityClient.extend({ messagingPlatformKey: z.string(), loginUrl: z.literal('production') }).optional(),
});
type SandboxKeys = z.infer<typeof SandboxKeys>;

const token = () => randomBytes(18).toString('base64url').replace(/[-_]/g, 'x');

function readSandboxKeys(path: string): SandboxKeys | undefined {
  if (!existsSync(path)) return undefined;
  const parsed = SandboxKeys.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  return parsed.success ? parsed.data : undefined;
}

function writeSandboxKeys(path: string, keys: SandboxKeys): void {
  writeFileSync(path, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
}

function sandboxKeys(dataDir: string): SandboxKeys {
  openDataFolder(dataDir);
  const path = join(dataDir, 'sandbox-keys.json');
  const existing = readSandboxKeys(path);
  if (existing) return existing;
  const keys: SandboxKeys = {
    paymentRestrictedKey: `rk_test_${token()}`,
    paymentSecretKey: `sk_test_${token()}`,
    billingSite: 'acme-test',
    billingReadOnlyKey: `test_${token()}`,
  };
  writeSandboxKeys(path, keys);
  return keys;
}

/**
 * The identity client for one connector (`data`, `messaging`): read
 * from the keys, or made once (ids, secret, a 2048-bit RSA key pair whose private half goes to
 * `<dataDir>/sandbox-<name>-private-key.pem`, mode 0600).
 */
export function sandboxIdentityClient(dataDir: string, name: string, existing: SandboxIdentityClient | undefined): SandboxIdentityClient {
  const privateKeyFile = resolve(dataDir, `sandbox-${name}-private-key.pem`);
  if (existing && existsSync(privateKeyFile)) return { clientId: existing.clientId, clientSecret: existing.clientSecret, username: existing.username, privateKeyFile };
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(privateKeyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
  return {
    clientId: `3MVG9${randomBytes(20).toString('hex')}`,
    clientSecret: randomBytes(32).toString('hex'),
    username: `${name}.integration@acme-sandbox.example`,
    privateKeyFile,
  };
}

/**
 * Registers an identity client as an admin would: OAuth on with the gateway's callback address,
 * the scopes given, the key pair's certificate for JWT bearer, and the integration user created
 * with the permissions given and pre-approved ("Admin approved users are pre-authorized").
 */
export function registerIdentityClient(
  identity: IdentityService,
  client: SandboxIdentityClient,
  setup: { callbackUrl: string; scopes: string[]; user: Omit<UserRegistration, 'username'> },
): void {
  const publicKey = createPublicKey(readFileSync(client.privateKeyFile, 'utf8'));
  identity.registerConnectedApp({
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    publicKey,
    callbackUrl: setup.callbackUrl,
    scopes: setup.scopes,
    approvedUsers: [client.username],
  });
  identity.registerUser({ username: client.username, ...setup.user });
}

/** The data connector's scopes (spec Authentication, Data connector 4). */
const DATA_SCOPES = ['api', 'refresh_token', 'offline_access', 'cdp_query_api', 'cdp_profile_api', 'cdp_ingest_api'];
/** The messaging connector's scopes (spec Authentication, Messaging connector 1). */
const MESSAGING_SCOPES = ['api', 'refresh_token', 'offline_access'];

export interface RunningSandbox {
  env: Record<string, string>;
  summary: string[];
  /** The simulators started (tests drive them: faults, records, webhook deliveries). */
  simulators: { payment?: PaymentSimulator; billing?: BillingSimulator; crm?: RunningCrmSimulator };
  stop(): Promise<void>;
}

const SEED = { customers: 200 } as const;

/** `SANDBOX_LATENCY_MS` and `SANDBOX_JITTER_MS`, whole milliseconds. */
const SandboxLatency = z.object({ ms: z.coerce.number().int().min(0).max(60_000), jitterMs: z.coerce.number().int().min(0).max(60_000) });

/**
 * Starts the simulators for every platform whose real address is not configured, seeded with a
 * small, repeatable data set, and returns the environment that points the gateway at them.
 */
/** The sandbox's Messaging for In-App and Web deployment (not secrets: the org id and deployment API name). */
export const SANDBOX_MESSAGING_API = { orgId: '00D000000000001', deploymentName: 'Sandbox_Deployment' } as const;

/** Simulators listen next to the gateway: PORT+1 payment, PORT+2 billing, PORT+3 data and messaging. */
export async function startSandbox(env: NodeJS.ProcessEnv, dataDir: string, gatewayPort: number): Promise<RunningSandbox> {
  const running: RunningSimulator[] = [];
  try {
    return await startSimulators(env, dataDir, gatewayPort, running);
  } catch (error) {
    // A port in use (or any failure) stops the simulators already started: nothing is left listening.
    await Promise.all(running.map((simulator) => simulator.stop()));
    throw error;
  }
}

async function startSimulators(env: NodeJS.ProcessEnv, dataDir: string, gatewayPort: number, running: RunningSimulator[]): Promise<RunningSandbox> {
  // How long every simulator takes to answer (a real list call: 200-600 ms).
  const latency = SandboxLatency.parse({ ms: env.SANDBOX_LATENCY_MS ?? 0, jitterMs: env.SANDBOX_JITTER_MS ?? 0 });
  const out: Record<string, string> = {};
  const summary: string[] = [];
  const simulators: RunningSandbox['simulators'] = {};
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
    simulators.payment = payment;
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
    simulators.billing = billing;
    out.BILLING_BASE_URL_TEMPLATE = `${billing.url}/sites/{site}`;
    summary.push(`  billing platform   ${billing.url}   (site "${keys.billingSite}", ${SEED.customers} customers)`);
  }
  if (!env.DATA_LOGIN_URL) {
    const crm = await startCrmSimulator({ echoAgent: true, port: gatewayPort + 3 });
    crm.setLatency(latency);
    running.push(crm);
    simulators.crm = crm;
    const data = sandboxIdentityClient(dataDir, 'data', keys.data);
    const messaging = sandboxIdentityClient(dataDir, 'messaging', keys.messaging);
    const forms = {
      data: { ...data, loginUrl: 'production', apiRegion: 'US' } as const,
      messaging: { ...messaging, messagingPlatformKey: keys.messaging?.messagingPlatformKey ?? `mpk_${token()}`, loginUrl: 'production' } as const,
    };
    // Written on first start, and again if the folder moved (the key files' paths are absolute).
    if (JSON.stringify([keys.data, keys.messaging]) !== JSON.stringify([forms.data, forms.messaging])) writeSandboxKeys(keysFile, { ...keys, ...forms });
    registerIdentityClient(crm.identity, data, {
      callbackUrl: `http://localhost:${gatewayPort}/auth/crmdata/callback`,
      scopes: DATA_SCOPES,
      user: { hasDataPlatformPermissionSet: true },
    });
    registerIdentityClient(crm.identity, messaging, {
      callbackUrl: `http://localhost:${gatewayPort}/auth/crmmessaging/callback`,
      scopes: MESSAGING_SCOPES,
      user: { hasMessagingUserLicense: true },
    });
    crm.messaging.registerMessagingChannel(forms.messaging.messagingPlatformKey);
    crm.messagingApi.registerDeployment(SANDBOX_MESSAGING_API.orgId, SANDBOX_MESSAGING_API.deploymentName);
    // Profiles, and a few engagement rows each for the first ones (Qualification and Lead Scoring reads).
    const individuals = crm.data.seedUnifiedIndividuals(SEED.customers);
    crm.data.seedEngagement(individuals.slice(0, 20), 5);
    out.DATA_LOGIN_URL = crm.url;
    out.DATA_SANDBOX_LOGIN_URL = crm.url;
    summary.push(`  data + messaging   ${crm.url}   (identity, data platform and conversation APIs on one host; ${SEED.customers} unified individuals, engagement rows for 20)`);
    summary.push(`  messaging API (SSE) ${crm.url}   (org ID ${SANDBOX_MESSAGING_API.orgId}, deployment ${SANDBOX_MESSAGING_API.deploymentName}: docs/conversations-sse.md)`);
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
    simulators,
    async stop() {
      await Promise.all(running.map((simulator) => simulator.stop()));
    },
  };
}
