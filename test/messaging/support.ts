import { randomBytes } from 'node:crypto';
import { startCrmSimulator, type CrmSimulatorOptions, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import type { GatewayEvent } from '../../shared/events/gateway-event';
import { rsaKeyPem } from '../data/support';
import { startTestGateway, type TestGateway } from '../support/local-runtime';

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

export interface MessagingSandbox {
  crm: RunningCrmSimulator;
  gateway: TestGateway;
  accountId: string;
  username: string;
  channel: string;
  userToken: string;
  apiKey: string;
  /** A playbook call with the account's API key. */
  playbook(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
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
  LONG_POLL_TIMEOUT_SECONDS: '30',
  PLATFORM_TIMEOUT_MS: '5000',
};

export async function startMessagingSandbox(options: MessagingSandboxOptions = {}): Promise<MessagingSandbox> {
  // 30 s long-polls answer 204 after 300 ms.
  const crm = await startCrmSimulator({ pollSecondsToMs: 10, ...options.simulator });
  const { privateKeyPem, publicKey } = rsaKeyPem();
  const clientId = `3MVG9${randomBytes(20).toString('hex')}`;
  const clientSecret = randomBytes(16).toString('hex');
  const username = `messaging.${randomBytes(4).toString('hex')}@acme.example`;
  const channel = `mpk-${randomBytes(8).toString('hex')}`;
  crm.identity.registerConnectedApp({
    clientId,
    clientSecret,
    publicKey,
    callbackUrl: 'http://127.0.0.1/auth/crmmessaging/callback',
    scopes: ['api', 'refresh_token', 'offline_access'],
    approvedUsers: options.approved === false ? [] : [username],
  });
  crm.identity.registerUser({ username, hasMessagingUserLicense: options.license ?? true });
  crm.messaging.registerMessagingChannel(channel);

  const gateway = await startTestGateway({
    DATA_LOGIN_URL: crm.loginUrl,
    DATA_SANDBOX_LOGIN_URL: crm.loginUrl,
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
    async playbook(method, path, body) {
      const response = await gateway.call(method, path, { headers: { authorization: `Bearer ${apiKey}` }, ...(body !== undefined ? { body } : {}) });
      const text = await response.text();
      return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    },
    events: (type) => (gateway.runtime.local.bus.recent(accountId) ?? []).filter((event) => !type || event.type === type),
    until,
    async stop() {
      await gateway.stop();
      await crm.stop();
    },
  };
}

/** The platform's conversation id of a gateway conversation. */
export async function platformIdOf(sandbox: MessagingSandbox, conversationId: string): Promise<string> {
  const stored = await sandbox.gateway.runtime.local.gateway.store.getConversation(sandbox.accountId, conversationId);
  if (!stored?.platformConversationId) throw new Error(`no platform id for ${conversationId}`);
  return stored.platformConversationId;
}
