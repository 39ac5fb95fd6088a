import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import type { ConnectorName } from '../connectors';
import { METRICS_NAMESPACE, METRICS_SERVICE, gatewayMetrics, type GatewayMetricName, type MetricDimension, type WebhookRefusalReason } from './catalogue';

/** One CloudWatch embedded-metric-format document, as Powertools serializes it. */
export type EmfDocument = ReturnType<Metrics['serializeMetrics']>;

/** Where EMF documents go: stdout in Lambda (CloudWatch turns them into metrics), the local recorder under `npm start`. */
export type MetricSink = (document: EmfDocument) => void;

let sink: MetricSink = (document) => process.stdout.write(`${JSON.stringify(document)}\n`);

export function setMetricSink(next: MetricSink): MetricSink {
  const previous = sink;
  sink = next;
  return previous;
}

/** Powertools Metrics, flushing through the sink rather than its own console. */
class SinkMetrics extends Metrics {
  override publishStoredMetrics(): this {
    try {
      if (this.hasStoredMetrics() && !this.isDisabled()) sink(this.serializeMetrics());
    } finally {
      this.clearMetrics();
      this.clearDimensions();
      this.clearMetadata();
    }
    return this;
  }
}

type Dimensions = Partial<Record<MetricDimension, string>>;

/**
 * All of an invocation's metrics. One EMF document carries one set of dimension values, so counts
 * are kept per set (a Powertools Metrics per set, made on first use) and every set is flushed by
 * `publishStoredMetrics`, which the Powertools `logMetrics` middleware calls after each invocation.
 * Counts of the same metric within one invocation add up in one document.
 */
class GatewayMetrics extends SinkMetrics {
  readonly #byDimensions = new Map<string, SinkMetrics>();
  /** The sets with counts since the last flush: only those are serialized (a flush runs after every invocation). */
  readonly #pending = new Set<SinkMetrics>();

  /**
   * Zero is not sent, for counters and levels alike: a series costs $0.30 a month for every hour it
   * receives data, and the alarms read missing data as 0 (FILL), so an idle stack pays for none.
   */
  count(name: GatewayMetricName, value: number, dimensions: Dimensions = {}): void {
    if (!(value > 0)) return;
    const wanted = gatewayMetrics[name].dimensions;
    const given = Object.keys(dimensions) as MetricDimension[];
    // Only the catalogue's dimensions, each with a value: an extra one would multiply the bill.
    if (given.length !== wanted.length || wanted.some((dimension) => !dimensions[dimension])) {
      throw new Error(`metric ${name} takes the dimensions ${wanted.join(', ') || 'none'}; got ${given.join(', ') || 'none'}`);
    }
    const target = wanted.length === 0 ? this : this.#forDimensions(dimensions);
    target.addMetric(name, MetricUnit.Count, value);
    this.#pending.add(target);
  }

  #forDimensions(dimensions: Dimensions): SinkMetrics {
    const key = JSON.stringify(dimensions);
    let metrics = this.#byDimensions.get(key);
    if (!metrics) {
      metrics = new SinkMetrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE, defaultDimensions: dimensions as Record<string, string> });
      this.#byDimensions.set(key, metrics);
    }
    return metrics;
  }

  override publishStoredMetrics(): this {
    const pending = [...this.#pending];
    this.#pending.clear();
    for (const metrics of pending) {
      if (metrics === this) super.publishStoredMetrics();
      else metrics.publishStoredMetrics();
    }
    return this;
  }
}

/** The process's metrics; the handler engine flushes them after every invocation. */
export const metrics = new GatewayMetrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE });

/**
 * What the domain records, in its own words. Nothing here takes an account id: per-account
 * detail belongs in the log lines, which carry the account id.
 */
export const recordMetric = {
  /** Records a sync run created, updated or deleted. */
  recordsSynced: (connector: ConnectorName, object: string, count: number) => metrics.count('RecordsSynced', count, { connector, object }),
  syncRun: (connector: ConnectorName, outcome: 'finished' | 'failed') => {
    metrics.count('SyncRuns', 1, { connector });
    if (outcome === 'failed') metrics.count('SyncFailures', 1, { connector });
  },
  /** A platform answered 429. */
  platformThrottled: (connector: ConnectorName) => metrics.count('PlatformThrottles', 1, { connector }),
  /** A platform call is being sent again. */
  platformRetried: (connector: ConnectorName) => metrics.count('PlatformRetries', 1, { connector }),
  webhookVerified: (connector: ConnectorName) => metrics.count('WebhooksVerified', 1, { connector }),
  webhookRefused: (connector: ConnectorName, reason: WebhookRefusalReason) => metrics.count('WebhooksRefused', 1, { connector, reason }),
  eventsPublished: (connector: ConnectorName, count: number) => metrics.count('EventsPublished', count, { connector }),
  ingestionRecords: (accepted: number, failed: number) => {
    metrics.count('IngestionRecordsAccepted', accepted);
    metrics.count('IngestionRecordsFailed', failed);
  },
  /**
   * For the messaging connector's pollers: the long-polls this poller holds now. Call it once a
   * minute per poller (the dashboard and the alarm sum a minute across pollers; none sent reads as 0).
   */
  pollsOpen: (count: number) => metrics.count('PollsOpen', count),
  /** For the messaging connector: conversation messages written and published. */
  messagesDelivered: (count: number) => metrics.count('MessagesDelivered', count),
  /** For the poller fleet's plan: conversations that should have a poll open now. */
  liveConversations: (count: number) => metrics.count('LiveConversations', count),
} as const;
