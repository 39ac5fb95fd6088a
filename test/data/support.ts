import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { startCrmSimulator, type CrmSimulatorOptions, type RunningCrmSimulator } from '../../sandbox/crm-simulator';
import { DataSyncSettings } from '../../shared/data/settings';
import type { TestGateway } from '../support/local-runtime';
import { storeConnection } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * A CRM simulator with one connected app (its public key registered, the integration user
 * admin-approved) and the data connection that matches it, for the data connector's tests.
 * Keys are generated at run time: nothing key-shaped is committed.
 */

/** Every OAuth scope the data connector uses (spec Authentication, Data connector 5). */
export const DATA_SCOPES = ['api', 'cdp_query_api', 'cdp_profile_api', 'cdp_ingest_api'];

export interface DataSandboxOptions {
  /** Scopes the connected app was given. Default: all of DATA_SCOPES. */
  scopes?: string[];
  /** Whether the integration user holds the data platform permission set. Default true. */
  permissionSet?: boolean;
  /** Whether an admin pre-approved the user on the app. Default true. */
  approved?: boolean;
  /** Passed to the simulator (clock, token lifetime, query batch size). */
  simulator?: CrmSimulatorOptions;
}

/** The slice of GatewayEnvironment the data connector reads. */
export interface DataSandboxEnv {
  DATA_LOGIN_URL: string;
  /** The same server under another name: a JWT addressed to it has the wrong audience. */
  DATA_SANDBOX_LOGIN_URL: string;
  ALLOW_INSECURE_PLATFORM_URLS: boolean;
  PLATFORM_TIMEOUT_MS: number;
}

export interface DataSandbox {
  sim: RunningCrmSimulator;
  env: DataSandboxEnv;
  config: { clientId: string; username: string; loginUrl: 'production'; apiRegion: 'US' };
  credentials: { privateKey: string };
  /** A fresh account id per sandbox, so token caches and rate budgets of tests never meet. */
  accountId: string;
  /** The app's key pair; `publicKey` is what the app verifies assertions with. */
  keys: { publicKey: KeyObject; privateKey: KeyObject };
  /** Token requests the simulator received: JWT bearer (`oauth2`) and a360 exchange (`exchange`). */
  tokenRequests(): { oauth2: number; exchange: number };
  stop(): Promise<void>;
}

/** A fresh RSA key pair of `bits`, private half as PEM (PKCS#8, or PKCS#1 with `pkcs1`). */
export function rsaKeyPem(bits = 2048, type: 'pkcs8' | 'pkcs1' = 'pkcs8'): { privateKeyPem: string; publicKey: KeyObject; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const privateKeyPem = privateKey.export({ type, format: 'pem' }).toString();
  return { privateKeyPem, publicKey, privateKey };
}

export async function startDataSandbox(options: DataSandboxOptions = {}): Promise<DataSandbox> {
  const sim = await startCrmSimulator(options.simulator);
  const { privateKeyPem, publicKey, privateKey } = rsaKeyPem();
  const clientId = `3MVG9${randomBytes(20).toString('hex')}`;
  const username = `integration.${randomBytes(4).toString('hex')}@acme.example`;

  sim.identity.registerConnectedApp({
    clientId,
    clientSecret: randomBytes(16).toString('hex'),
    publicKey,
    callbackUrl: 'http://127.0.0.1/auth/crmdata/callback',
    scopes: options.scopes ?? DATA_SCOPES,
    approvedUsers: options.approved === false ? [] : [username],
  });
  sim.identity.registerUser({ username, hasDataPlatformPermissionSet: options.permissionSet ?? true });

  return {
    sim,
    env: {
      DATA_LOGIN_URL: sim.loginUrl,
      DATA_SANDBOX_LOGIN_URL: sim.loginUrl.replace('127.0.0.1', 'localhost'),
      ALLOW_INSECURE_PLATFORM_URLS: true,
      PLATFORM_TIMEOUT_MS: 5_000,
    },
    config: { clientId, username, loginUrl: 'production', apiRegion: 'US' },
    credentials: { privateKey: privateKeyPem },
    accountId: `acct-data-${randomBytes(4).toString('hex')}`,
    keys: { publicKey, privateKey },
    tokenRequests: () => ({
      oauth2: sim.requests.get('POST /services/oauth2/token') ?? 0,
      exchange: sim.requests.get('POST /services/a360/token') ?? 0,
    }),
    stop: () => sim.stop(),
  };
}

/**
 * The local gateway (its HTTP front, queues, schedules on demand) with a data connection to a CRM
 * simulator, and a playbook API key: for end-to-end tests of the data connector's routes.
 */
export interface DataGateway {
  gateway: TestGateway;
  sandbox: DataSandbox;
  accountId: string;
  /** The playbook API key of the account. */
  key: string;
  userToken(): Promise<string>;
  /** Stores (or replaces) the data connection with these sync settings. */
  connect(syncSettings?: Record<string, unknown>): Promise<void>;
  /** Queries the data platform received so far. */
  queries(): number;
  stop(): Promise<void>;
}

export async function startDataGateway(options: { sandbox?: DataSandboxOptions; dataDir?: string; existing?: DataSandbox } = {}): Promise<DataGateway> {
  const sandbox = options.existing ?? (await startDataSandbox(options.sandbox));
  const { startTestGateway } = await import('../support/local-runtime');
  const gateway = await startTestGateway(
    {
      DATA_LOGIN_URL: sandbox.env.DATA_LOGIN_URL,
      DATA_SANDBOX_LOGIN_URL: sandbox.env.DATA_SANDBOX_LOGIN_URL,
      ALLOW_INSECURE_PLATFORM_URLS: 'true',
      PLATFORM_TIMEOUT_MS: '5000',
    },
    options.dataDir ? { dataDir: options.dataDir } : {},
  );
  const accountId = sandbox.accountId;
  const local = gateway.runtime.local.gateway;
  const userToken = () => gateway.userToken(accountId);
  let key = '';
  if (!(await store.getAccount(local.table, accountId))) await gateway.enableAccount(accountId);
  const response = await gateway.call('POST', `/api/v1/accounts/${accountId}/api-keys`, { token: await userToken(), body: { name: 'playbook' } });
  if (response.status !== 201) throw new Error(`no API key: ${response.status}`);
  key = ((await response.json()) as { key: string }).key;

  const connect = async (syncSettings: Record<string, unknown> = {}) => {
    const existing = await store.getConnection(local.table, accountId, 'data');
    if (existing) await store.deleteConnection(local.table, accountId, 'data');
    await storeConnection(local, { accountId, connector: 'data', credentials: sandbox.credentials, config: sandbox.config, syncSettings: DataSyncSettings.parse(syncSettings) });
  };
  return {
    gateway,
    sandbox,
    accountId,
    key,
    userToken,
    connect,
    queries: () => sandbox.sim.data.queriesReceived,
    async stop() {
      await gateway.stop();
      if (!options.existing) await sandbox.stop();
    },
  };
}
