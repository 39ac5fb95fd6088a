import * as z from 'zod/mini';

/**
 * Everything a handler reads from its environment, in one schema. The CDK stack sets these on
 * each function (only the ones it needs); the local runtime sets them for its process.
 * Unset optional values mean "this handler does not use it".
 */
export const GatewayEnvironment = z.object({
  /** `aws` inside Lambda; `local` under `npm start` and the tests. */
  GATEWAY_MODE: z._default(z.enum(['aws', 'local']), 'aws'),
  TABLE_NAME: z.optional(z.string().check(z.minLength(3))),
  /** DynamoDB endpoint override (dynalite / DynamoDB Local on loopback). */
  DYNAMODB_ENDPOINT: z.optional(z.url()),
  /** KMS key (ARN or id) that wraps each connection's data keys. */
  CREDENTIALS_KEY_ID: z.optional(z.string()),
  /** Local mode: the key file that stands in for KMS. */
  LOCAL_KEY_FILE: z.optional(z.string()),
  /** How long decrypted credentials stay in a warm function's memory. */
  VAULT_CACHE_TTL_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(3600)), 300),
  SYNC_QUEUE_URL: z.optional(z.string()),
  WEBHOOK_QUEUE_URL: z.optional(z.string()),
  INGESTION_QUEUE_URL: z.optional(z.string()),
  EVENT_BUS_NAME: z.optional(z.string()),
  CONVERSATION_STATE_MACHINE_ARN: z.optional(z.string()),
  POLLER_FLEET_STATE_MACHINE_ARN: z.optional(z.string()),
  /** SQS queue through which new conversations reach the running pollers. */
  POLLER_NOTICE_QUEUE_URL: z.optional(z.string()),
  /**
   * Long-polls one poller run holds at most (default 230), within what a 128 MB poller holds with a
   * fifth of its memory free (shared/messaging/fleet.ts pollerCapacity, POLLER_MEMORY_BUDGET).
   * Measured (`npm run bench -- conversations`): the lean poller bundle with fetch loaded takes 77 MB,
   * each held conversation 68-75 KB (RSS, mostly its TLS connection; 74.9 KB the highest measured).
   * With a quarter more for run-to-run variation that allows (128 × 0.8 − 77) MB / (74.9 KB × 1.25) =
   * 277. 230 is kept:
   * at 290 (four runs of 250 instead of five of 200 for 1,000 conversations) the bench's round
   * changes took longer and its first-poll p99 was 1.7 and 2.2 s against 0.62 and 0.96 s at 230, for
   * a conversation-hour 17% cheaper (docs/conversations.md, "Conversation cost"). Larger pollers need a larger
   * function (and this raised with it).
   */
  POLLER_CAPACITY: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(2000)), 230),
  /** How long a poller run lasts before it hands over (seconds; the Lambda's limit is 900). */
  POLLER_RUN_SECONDS: z._default(z.coerce.number().check(z.minimum(1), z.maximum(880)), 840),
  /** A poller run's heartbeat period and how long its leases hold without one (seconds). */
  POLLER_HEARTBEAT_SECONDS: z._default(z.coerce.number().check(z.minimum(0.05), z.maximum(60)), 5),
  POLLER_LEASE_SECONDS: z._default(z.coerce.number().check(z.minimum(0.2), z.maximum(300)), 20),
  /**
   * How often a poller run lists every live conversation for one nobody holds, besides its first look
   * and a look whenever a run's heartbeat lapsed (seconds): a listing reads every live item.
   */
  POLLER_SWEEP_SECONDS: z._default(z.coerce.number().check(z.minimum(0.05), z.maximum(600)), 30),
  /**
   * How long after a lease's release the next holder opens its first poll (seconds): the platform
   * must have seen the released run's aborted poll close, or it answers the new one 409.
   */
  POLLER_HANDOVER_GRACE_SECONDS: z._default(z.coerce.number().check(z.minimum(0), z.maximum(10)), 1),
  /** A poller run holding nothing for this long ends early, so an idle fleet stops (seconds). */
  POLLER_IDLE_SECONDS: z._default(z.coerce.number().check(z.minimum(0.1), z.maximum(900)), 60),
  /** The long-poll's `timeout` (spec: 30). */
  LONG_POLL_TIMEOUT_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(120)), 30),
  /** The Secrets Manager secret whose value the distribution sends in its origin header (HTTP functions only). */
  ORIGIN_SECRET_ARN: z.optional(z.string()),
  /** The gateway's own public address ({base_url} in the spec). */
  BASE_URL: z.optional(z.url('BASE_URL must be an absolute address, such as https://gateway.example.com')),
  /** Platform addresses: real ones by default; the sandbox simulators' under `npm start`. */
  PAYMENT_API_BASE_URL: z._default(z.url(), 'https://api.stripe.com'),
  /** `{site}` is replaced by the connection's Site Name. */
  BILLING_BASE_URL_TEMPLATE: z._default(z.string(), 'https://{site}.chargebee.com'),
  DATA_LOGIN_URL: z._default(z.url(), 'https://login.salesforce.com'),
  DATA_SANDBOX_LOGIN_URL: z._default(z.url(), 'https://test.salesforce.com'),
  /**
   * The CRM org's session timeout (seconds): its identity access tokens carry no expiry, so the
   * gateway renews them this long after sign-in, less five minutes. 7,200 is the platform's default.
   */
  IDENTITY_SESSION_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(600), z.maximum(86_400)), 7_200),
  /** Where the OAuth callbacks send the browser back to (the dashboard's address); default: the gateway's own `/`. */
  DASHBOARD_URL: z.optional(z.url()),
  /** Per-attempt timeout of every platform call; a hung platform never hangs a sync. */
  PLATFORM_TIMEOUT_MS: z._default(z.coerce.number().check(z.int(), z.minimum(100), z.maximum(120_000)), 10_000),
  /** Allows http:// platform addresses (loopback simulators only). Never set in AWS. */
  ALLOW_INSECURE_PLATFORM_URLS: z.pipe(
    z._default(z.enum(['true', 'false']), 'false'),
    z.transform((v) => v === 'true'),
  ),
  /**
   * How far (seconds) a payment webhook's signed timestamp may lie from now: older deliveries are
   * refused as possible replays. 300 is the platform libraries' default.
   */
  WEBHOOK_TOLERANCE_SECONDS: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(86_400)), 300),
  LOG_LEVEL: z._default(z.enum(['debug', 'info', 'warn', 'error']), 'info'),
});
export type GatewayEnvironment = z.infer<typeof GatewayEnvironment>;

let cached: GatewayEnvironment | undefined;

/** Parses process.env once per process; a bad value fails loudly at start, not mid-request. */
export function gatewayEnvironment(env: NodeJS.ProcessEnv = process.env): GatewayEnvironment {
  if (env !== process.env) return GatewayEnvironment.parse(env);
  cached ??= GatewayEnvironment.parse(env);
  return cached;
}

/** Tests and the local runtime change the environment; this forgets the parsed copy. */
export function resetGatewayEnvironment(): void {
  cached = undefined;
}

// ---- settings checked when a function loads and when `npm start` starts ----

export type GatewayVariable = keyof GatewayEnvironment;

/** Why the gateway refuses to start: every setting that is wrong, each named, with what is wrong. */
export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Settings are not valid:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'SettingsError';
  }
}

const REQUIRED_BECAUSE: Partial<Record<GatewayVariable, string>> = {
  TABLE_NAME: 'the DynamoDB table this function reads and writes',
  CREDENTIALS_KEY_ID: 'the KMS key that opens connection credentials',
  SYNC_QUEUE_URL: 'the SQS queue this function sends sync jobs to',
  WEBHOOK_QUEUE_URL: 'the SQS queue this function sends verified webhook events to',
  INGESTION_QUEUE_URL: 'the SQS queue this function sends engagement events to',
  EVENT_BUS_NAME: 'the EventBridge bus this function publishes events on',
  CONVERSATION_STATE_MACHINE_ARN: "the state machine that runs each conversation's lifecycle",
  POLLER_FLEET_STATE_MACHINE_ARN: 'the poller fleet state machine this function starts',
  POLLER_NOTICE_QUEUE_URL: 'the SQS queue through which new conversations reach the pollers',
  ORIGIN_SECRET_ARN: 'the secret the distribution sends in its origin header; without it every request is refused',
};

/** An address a platform client will accept: https, or http for loopback simulators when allowed. */
function addressProblem(value: string, allowInsecure: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `is not a URL (got "${value}")`;
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    return `must be an https:// address${allowInsecure ? ' (or http://)' : ' (http:// only with ALLOW_INSECURE_PLATFORM_URLS=true, for local simulators)'}; got ${url.protocol}//`;
  }
  if (url.username || url.password) return 'must not carry credentials';
  if (url.search || url.hash) return 'must not have a query string or fragment';
  return undefined;
}

/**
 * Every problem with the environment, for the settings this function uses (`required`) and every
 * setting that is set at all: each message names the setting and says what is wrong.
 */
export function settingsProblems(env: Record<string, string | undefined>, required: readonly GatewayVariable[] = []): string[] {
  const problems: string[] = [];
  const parsed = GatewayEnvironment.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) problems.push(`${issue.path.map(String).join('.') || '(environment)'}: ${issue.message}`);
    return problems;
  }
  const settings = parsed.data;
  for (const name of required) {
    const value = settings[name];
    if (value === undefined || value === '') problems.push(`${name}: is not set; this function needs it (${REQUIRED_BECAUSE[name] ?? 'it reads it'})`);
  }
  const insecure = settings.ALLOW_INSECURE_PLATFORM_URLS;
  for (const name of ['PAYMENT_API_BASE_URL', 'DATA_LOGIN_URL', 'DATA_SANDBOX_LOGIN_URL'] as const) {
    const problem = addressProblem(settings[name], insecure);
    if (problem) problems.push(`${name}: ${problem}`);
  }
  const template = settings.BILLING_BASE_URL_TEMPLATE;
  if (!template.includes('{site}')) {
    problems.push(
      `BILLING_BASE_URL_TEMPLATE: must contain {site}, where each connection's Site Name goes (e.g. https://{site}.chargebee.com); got "${template}"`,
    );
  } else {
    const problem = addressProblem(template.split('{site}').join('acme-test'), insecure);
    if (problem) problems.push(`BILLING_BASE_URL_TEMPLATE: with {site} filled in, ${problem}`);
  }
  if (settings.BASE_URL) {
    const problem = addressProblem(settings.BASE_URL, settings.GATEWAY_MODE === 'local' || insecure);
    if (problem) problems.push(`BASE_URL: ${problem}`);
  }
  for (const name of ['SYNC_QUEUE_URL', 'WEBHOOK_QUEUE_URL', 'INGESTION_QUEUE_URL'] as const) {
    const value = settings[name];
    if (value !== undefined && !URL.canParse(value)) problems.push(`${name}: is not a queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>)`);
  }
  if (settings.GATEWAY_MODE === 'aws' && insecure) {
    problems.push('ALLOW_INSECURE_PLATFORM_URLS: must not be true in AWS; it exists for the local simulators only');
  }
  return problems;
}

/** The parsed environment, or a SettingsError naming every setting that is wrong. */
export function checkedEnvironment(env: Record<string, string | undefined>, required: readonly GatewayVariable[] = []): GatewayEnvironment {
  const problems = settingsProblems(env, required);
  if (problems.length > 0) throw new SettingsError(problems);
  return GatewayEnvironment.parse(env);
}
