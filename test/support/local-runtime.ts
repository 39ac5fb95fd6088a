import { startLocalRuntime, type LocalRuntime } from '../../local/local-runtime';

export interface TestGateway {
  runtime: LocalRuntime;
  url: string;
  /** fetch against the local gateway with a sign-in token. */
  call(method: string, path: string, options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<Response>;
  operatorToken(): Promise<string>;
  userToken(accountId: string): Promise<string>;
  /** Creates an account with Integrations switched on (as the operator). */
  enableAccount(accountId: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Tests never reach a real platform: a platform a test does not point at its simulator is a closed
 * loopback port, so a call made by mistake fails at once instead of going to the internet.
 */
const NO_PLATFORM = {
  PAYMENT_API_BASE_URL: 'http://127.0.0.1:9',
  BILLING_BASE_URL_TEMPLATE: 'http://127.0.0.1:9/sites/{site}',
  DATA_LOGIN_URL: 'http://127.0.0.1:9',
  DATA_SANDBOX_LOGIN_URL: 'http://localhost:9',
  ALLOW_INSECURE_PLATFORM_URLS: 'true',
};

/** The whole local gateway (in-memory dynalite, throwaway key; or on disk in `dataDir`) on a free port, for end-to-end tests. */
export async function startTestGateway(env: Record<string, string> = {}, options: { dataDir?: string; dynamoInChildProcess?: boolean } = {}): Promise<TestGateway> {
  const runtime = await startLocalRuntime({ port: 0, schedules: false, retryDelayMs: 10, env: { ...NO_PLATFORM, ...env }, ...options });
  const call: TestGateway['call'] = (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    return fetch(`${runtime.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  };
  const operatorToken = () => runtime.local.signIn.issue({ operator: true });
  return {
    runtime,
    url: runtime.url,
    call,
    operatorToken,
    userToken: (accountId) => runtime.local.signIn.issue({ accountId }),
    async enableAccount(accountId) {
      const response = await call('PUT', `/api/v1/accounts/${accountId}`, {
        token: await operatorToken(),
        body: { name: accountId, integrationsEnabled: true },
      });
      if (response.status !== 200) throw new Error(`could not create account ${accountId}: ${response.status}`);
    },
    stop: () => runtime.stop(),
  };
}

/** A payment-platform-shaped test key, made at run time (never a committed literal). */
export function generatedKey(prefix: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return prefix + Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}
