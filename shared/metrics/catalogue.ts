/**
 * The gateway's custom CloudWatch metrics: one namespace, a fixed list of names, and few
 * dimensions with few values each. Every distinct (name, dimension values) is one billed custom
 * metric ($0.30 a month each), so the dimensions are the connector, the data object and a refusal
 * reason, never an account id or any other per-tenant value: account ids stay in the log lines.
 *
 * The CDK dashboard and alarms (lib/monitoring.ts) read the same catalogue.
 */
export const METRICS_NAMESPACE = 'IntegrationGateway';
/** Powertools' `service` dimension, on every metric. */
export const METRICS_SERVICE = 'integration-gateway';

export type MetricDimension = 'connector' | 'object' | 'reason';

interface MetricDefinition {
  readonly dimensions: readonly MetricDimension[];
  readonly description: string;
}

export const gatewayMetrics = {
  RecordsSynced: { dimensions: ['connector', 'object'], description: 'records a sync run created, updated or deleted (counted when the run finishes)' },
  SyncRuns: { dimensions: ['connector'], description: 'sync runs that finished or failed' },
  SyncFailures: { dimensions: ['connector'], description: 'sync runs that failed' },
  PlatformThrottles: { dimensions: ['connector'], description: 'platform answers 429 (too many requests)' },
  PlatformRetries: { dimensions: ['connector'], description: 'platform calls sent again after a 429, a 5xx, a timeout or a network error' },
  WebhooksVerified: { dimensions: ['connector'], description: 'webhook deliveries verified and queued' },
  WebhooksRefused: { dimensions: ['connector', 'reason'], description: 'webhook deliveries refused, by reason' },
  EventsPublished: { dimensions: ['connector'], description: 'normalised events published for playbooks' },
  IngestionRecordsAccepted: { dimensions: [], description: 'engagement events the data platform took' },
  IngestionRecordsFailed: { dimensions: [], description: 'engagement events not taken this time (retried, then dead-lettered)' },
  PollsOpen: { dimensions: [], description: 'long-polls a poller holds: each poller reports its count once a minute (Sum over a minute = polls open)' },
  MessagesDelivered: { dimensions: [], description: 'conversation messages written and published' },
  LiveConversations: { dimensions: [], description: 'conversations that should have a poll open, reported by each poller-fleet plan' },
  QuotaRefusals: { dimensions: ['reason'], description: "requests refused with 429 because an account was over one of its quotas (reason: the quota's kind)" },
  WebhookEventsConfirmed: { dimensions: ['connector'], description: 'webhook events the platform confirmed (the event or its record fetched back) before they were applied' },
  WebhookEventsUnconfirmed: { dimensions: ['connector'], description: 'webhook events dropped because the platform did not confirm them' },
} as const satisfies Record<string, MetricDefinition>;

export type GatewayMetricName = keyof typeof gatewayMetrics;

/** Why a webhook delivery was refused: the `reason` dimension (a small, fixed set). */
export const webhookRefusalReasons = ['signature', 'stale', 'account', 'secret_missing', 'request', 'unavailable'] as const;
export type WebhookRefusalReason = (typeof webhookRefusalReasons)[number];
