import { randomBytes } from 'node:crypto';
import { startCrmSimulator, type CrmSimulatorOptions, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import type { ConnectedAppRegistration, UserRegistration } from '../../sandbox/identity-simulator';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import { rsaKeyPem } from '../data/support';
import { startTestGateway, type TestGateway } from '../support/local-runtime';
import * as store from '../../shared/store/store';

/**
 * The messaging connector end to end: a CRM simulator (identity + conversation API) with one
 * connected app, an integration user holding the Messaging User license and a messaging channel;
 * the local gateway (local runtime: dynalite, the deployed state machines in a local interpreter,
 * the same poller code) with the messaging connection made through the API and a playbook key.
 * Keys are generated at run time.
 */

export interface MessagingSandboxOptions {
  simulator?: CrmSimulatorOptions;
  license?: boolean;
  approved?: boolean;
  /** Gateway environment on top of the short test timings below. */
  env?: Record<string, string>;
  settings?: Record<string, unknown>;
  /** Benchmarks: dynalite in its own process, so the table does not share the gateway's CPU. */
  dynamoInChildProcess?: boolean;
}

/**
 * What the sandbox needs of the CRM simulator to set the world up: the in-process simulator, or
 * one in a child process (benchmarks: the platform's side does not share the gateway's CPU).
 */
export interface MessagingWorld {
  loginUrl: string;
  registerConnectedApp(registration: ConnectedAppRegistration): void | Promise<void>;
  registerUser(registration: UserRegistration): unknown;
  registerMessagingChannel(messagingPlatformKey: string): void | Promise<void>;
  stop(): Promise<void>;
}

export interface MessagingSandbox<Crm = RunningCrmSimulator> {
  crm: Crm;
  gateway: TestGateway;
  accountId: string;
  username: string;
  channel: string;
  userToken: string;
  apiKey: string;
  /** A playbook call with the account's API key, or with `apiKey` (another account's). */
  /** `retryAfterS`: the answer's Retry-After, when it has one (a 429 over the account's quota). */
  playbook(method: string, path: string, body?: unknown, apiKey?: string): Promise<{ status: number; body: Record<string, unknown>; retryAfterS?: number }>;
  /** Events published on the local bus for the account, oldest first. */
  events(type?: string): GatewayEvent[];
  /** Waits until `check` holds (polling every 10 ms), or fails after `timeoutMs`. */
  until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

/** Short timings so handovers, lapses and long-poll timeouts happen within a test. */
export const TEST_POLLER_ENV = {
  POLLER_HEARTBEAT_SECONDS: '0.1',
  POLLER_LEASE_SECONDS: '0.5',
  POLLER_RUN_SECONDS: '30',
  POLLER_IDLE_SECONDS: '0.3',
  POLLER_SWEEP_SECONDS: '1',
  POLLER_HANDOVER_SECONDS: '5',
  LONG_POLL_TIMEOUT_SECONDS: '30',
  PLATFORM_TIMEOUT_MS: '5000',
};

export async function startMessagingSandbox(options: MessagingSandboxOptions = {}): Promise<MessagingSandbox> {
  // 30 s long-polls answer 204 after 300 ms.
  const crm = await startCrmSimulator({ pollSecondsToMs: 10, ...options.simulator });
  const world: MessagingWorld = {
    loginUrl: crm.loginUrl,
    registerConnectedApp: (registration) => crm.identity.registerConnectedApp(registration),
    registerUser: (registration) => crm.identity.registerUser(registration),
    registerMessagingChannel: (key) => crm.messaging.registerMessagingChannel(key),
    stop: () => crm.stop(),
  };
  return connectMessagingSandbox(crm, world, options);
}

/** The gateway side of the sandbox, against a CRM simulator set up through `world`. */
export async function connectMessagingSandbox<Crm>(crm: Crm, world: MessagingWorld, options: Omit<MessagingSandboxOptions, 'simulator'> = {}): Promise<MessagingSandbox<Crm>> {
  const { privateKeyPem, publicKey } = rsaKeyPem();
  const clientId = `3MVG9${randomBytes(20).toString('hex')}`;
  const clientSecret = randomBytes(16).toString('hex');
  const username = `messaging.${randomBytes(4).toString('hex')}@acme.example`;
  const channel = `mpk-${randomBytes(8).toString('hex')}`;
  await world.registerConnectedApp({
    clientId,
    clientSecret,
    publicKey,
    callbackUrl: 'http://127.0.0.1/auth/crmmessaging/callback',
    scopes: ['api', 'refresh_token', 'offline_access'],
    approvedUsers: options.approved === false ? [] : [username],
  });
  await world.registerUser({ username, hasMessagingUserLicense: options.license ?? true });
  await world.registerMessagingChannel(channel);

  const gateway = await startTestGateway({
    DATA_LOGIN_URL: world.loginUrl,
    DATA_SANDBOX_LOGIN_URL: world.loginUrl,
    ALLOW_INSECURE_PLATFORM_URLS: 'true',
    ...TEST_POLLER_ENV,
    ...options.env,
  }, { dynamoInChildProcess: options.dynamoInChildProcess ?? false });
  const accountId = `acct-msg-${randomBytes(4).toString('hex')}`;
  await gateway.enableAccount(accountId);
  const userToken = await gateway.userToken(accountId);
  const connect = await gateway.call('PUT', `/api/v1/accounts/${accountId}/connections/messaging`, {
    token: userToken,
    body: { authenticationMethod: 'jwt_bearer', clientId, clientSecret, username, certificate: privateKeyPem, messagingPlatformKey: channel },
  });
  if (connect.status !== 200 && connect.status !== 201) throw new Error(`connect messaging: ${connect.status} ${await connect.text()}`);
  if (options.settings) {
    const saved = await gateway.call('PUT', `/api/v1/accounts/${accountId}/connections/messaging/sync-settings`, { token: userToken, body: options.settings });
    if (saved.status !== 200) throw new Error(`messaging settings: ${saved.status} ${await saved.text()}`);
  }
  const keyAnswer = await gateway.call('POST', `/api/v1/accounts/${accountId}/api-keys`, { token: userToken, body: { name: 'playbook' } });
  const apiKey = ((await keyAnswer.json()) as { key: string }).key;

  const until: MessagingSandbox['until'] = async (what, check, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value !== undefined && value !== false) return value as never;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    crm,
    gateway,
    accountId,
    username,
    channel,
    userToken,
    apiKey,
    async playbook(method, path, body, key = apiKey) {
      const response = await gateway.call(method, path, { headers: { authorization: `Bearer ${key}` }, ...(body !== undefined ? { body } : {}) });
      const text = await response.text();
      const retryAfter = response.headers.get('retry-after');
      return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, ...(retryAfter ? { retryAfterS: Number(retryAfter) } : {}) };
    },
    events: (type) => (gateway.runtime.local.bus.recent(accountId) ?? []).filter((event) => !type || event.type === type),
    until,
    async stop() {
      await gateway.stop();
      await world.stop();
    },
  };
}

/** The platform's conversation id of a gateway conversation. */
export async function platformIdOf(sandbox: MessagingSandbox<unknown>, conversationId: string): Promise<string> {
  const stored = await store.getConversation(sandbox.gateway.runtime.local.gateway.table, sandbox.accountId, conversationId);
  if (!stored?.platformConversationId) throw new Error(`no platform id for ${conversationId}`);
  return stored.platformConversationId;
}
