import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import * as z from 'zod';
import { GatewayEnvironment } from '../shared/config';

/** The platform addresses the functions use when nothing else is said: the same defaults as shared/config.ts. */
const platformDefaults = GatewayEnvironment.parse({});

/** CloudWatch Logs accepts only these retention periods (in days). */
const retentionPeriods = new Set(Object.values(RetentionDays).filter((days) => typeof days === 'number'));

/** `-c key=value` on the command line arrives as a string; an empty string means "not set". */
const unsetWhenEmpty = (value: unknown) => (value === '' || value === null ? undefined : value);

/**
 * The deployment's settings, read from CDK context (cdk.json or `-c key=value`).
 * Each key is documented in docs/deploy.md; the defaults below match cdk.json.
 */
export const GatewaySettings = z.object({
  /** Email address subscribed to the alarm topic. Unset: no subscription. */
  alarmEmail: z.preprocess(unsetWhenEmpty, z.email().optional()),
  /** How long every log group keeps its logs. */
  logRetentionDays: z.coerce
    .number()
    .refine((days) => retentionPeriods.has(days), 'logRetentionDays must be a CloudWatch Logs retention period (1, 3, 5, 7, 14, 30, 60, 90, ...)')
    .default(30),
  /** The gateway's public address when it has a custom domain. Unset: the HTTP API's own address. */
  baseUrl: z.preprocess(unsetWhenEmpty, z.url({ protocol: /^https$/ }).optional()),
  /**
   * The prefix of the dashboard's sign-in domain (`<prefix>.auth.<region>.amazoncognito.com`): lower-case letters,
   * digits and dashes, unique in the region. Unset: one derived from the stack's id.
   */
  authDomainPrefix: z.preprocess(
    unsetWhenEmpty,
    z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'authDomainPrefix must be lower-case letters, digits and dashes (1-63)')
      .refine((prefix) => !/aws|amazon|cognito/.test(prefix), 'authDomainPrefix may not contain aws, amazon or cognito')
      .optional(),
  ),
  /** A WAF web ACL (scope CLOUDFRONT, in us-east-1) for the dashboard's distribution, instead of the gateway's own. Unset: none. */
  webAclArn: z.preprocess(unsetWhenEmpty, z.string().regex(/^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/.+$/, 'webAclArn must be a CLOUDFRONT-scope WAFv2 web ACL ARN in us-east-1').optional()),
  /**
   * The gateway's own web ACL with a rate rule per client address (lib/edge-firewall.ts), created when the
   * stack is deployed in us-east-1 and no webAclArn is given. `-c wafRateRule=false` switches it off.
   */
  wafRateRule: z.preprocess((value) => (value === 'false' ? false : value === 'true' ? true : unsetWhenEmpty(value)), z.boolean().default(true)),
  /** Requests one client address may make in five minutes (WAF's least is 10). */
  wafRateLimit: z.coerce.number().int().min(10).max(2_000_000_000).default(2000),
  paymentApiBaseUrl: z.url({ protocol: /^https$/ }).default(platformDefaults.PAYMENT_API_BASE_URL),
  billingBaseUrlTemplate: z
    .string()
    .refine((template) => template.startsWith('https://') && template.includes('{site}'), 'billingBaseUrlTemplate must be an https address containing {site}')
    .default(platformDefaults.BILLING_BASE_URL_TEMPLATE),
  dataLoginUrl: z.url({ protocol: /^https$/ }).default(platformDefaults.DATA_LOGIN_URL),
  dataSandboxLoginUrl: z.url({ protocol: /^https$/ }).default(platformDefaults.DATA_SANDBOX_LOGIN_URL),
  /** Default-stage throttling of the HTTP API: steady requests per second, and burst. Bounds cost under a flood. */
  apiThrottleRate: z.coerce.number().positive().default(200),
  apiThrottleBurst: z.coerce.number().int().positive().default(400),
  /**
   * Write units a second the table (and its index) takes at once from the day it is created: a new on-demand table
   * takes 4,000 and doubles its previous peak within 30 minutes, so a big first sync in a new deployment is paced
   * by the table, not the platform (docs/first-sync.md, "The table's own pace"). Unset: DynamoDB's default.
   * At most 40,000, the default table quota for on-demand writes.
   */
  tableWarmWriteUnits: z.preprocess(unsetWhenEmpty, z.coerce.number().int().min(4_000).max(40_000).optional()),
});
export type GatewaySettings = z.infer<typeof GatewaySettings>;

/** Reads every setting from the construct tree's context; a bad value stops the synth with the key's name. */
export function readGatewaySettings(scope: Construct): GatewaySettings {
  const raw = Object.fromEntries(Object.keys(GatewaySettings.shape).map((key) => [key, scope.node.tryGetContext(key)]));
  const parsed = GatewaySettings.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`Invalid CDK context for the integration gateway:\n${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
