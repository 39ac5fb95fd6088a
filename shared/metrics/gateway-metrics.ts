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
    const document = this.takeDocument();
    if (document) sink(document);
    return this;
  }

  /** Whether documents are sent (Powertools' POWERTOOLS_METRICS_DISABLED turns them off). */
  get sending(): boolean {
    return !this.isDisabled();
  }

  /** The stored metrics as one EMF document (undefined when there are none or metrics are off), then cleared. */
  takeDocument(): EmfDocument | undefined {
    try {
      return this.hasStoredMetrics() && !this.isDisabled() ? this.serializeMetrics() : undefined;
    } finally {
      this.clearMetrics();
      this.clearDimensions();
      this.clearMetadata();
    }
  }
}

type Dimensions = Partial<Record<MetricDimension, string>>;

/** One dimension set's counts since the last flush: each metric's values in the order counted. */
interface PendingSet {
  metrics: SinkMetrics;
  key: string;
  values: Map<GatewayMetricName, number[]>;
}

/** Documents remembered by content; a few dozen shapes cover a function's steady traffic. */
const MAX_REMEMBERED_DOCUMENTS = 64;
/** Only small documents are remembered (a value list of Powertools' own maximum, 100, flushes early). */
const MAX_REMEMBERED_VALUES = 10;

/**
 * All of an invocation's metrics. One EMF document carries one set of dimension values, so counts
 * are kept per set (a Powertools Metrics per set, made on first use) and every set is flushed by
 * `publishStoredMetrics`, which the Powertools `logMetrics` middleware calls after each invocation.
 * A metric counted twice within one invocation is sent as Powertools sends it: its values as a
 * list, one sample each.
 *
 * Counts wait in a plain list until the flush, and the flush serializes a dimension set only the
 * first time it sees its content (names and values): a warm webhook receiver sends the same
 * `WebhooksVerified: 1` document every invocation, which is then the remembered document with
 * the invocation's timestamp (bench/webhooks.ts measures the receiver's overhead).
 */
class GatewayMetrics extends SinkMetrics {
  readonly #byDimensions = new Map<string, SinkMetrics>();
  readonly #pending = new Map<string, PendingSet>();
  readonly #documents = new Map<string, EmfDocument>();
  /** Whether anything was added through Powertools' own API on this instance (the flush then serializes it too). */
  #direct = false;

  override addMetric(...args: Parameters<Metrics['addMetric']>): this {
    this.#direct = true;
    return super.addMetric(...args);
  }

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
    const key = given.length === 0 ? '' : JSON.stringify(dimensions);
    let pending = this.#pending.get(key);
    if (!pending) this.#pending.set(key, (pending = { metrics: this.#forDimensions(key, dimensions), key, values: new Map() }));
    const values = pending.values.get(name);
    if (values) values.push(value);
    else pending.values.set(name, [value]);
  }

  #forDimensions(key: string, dimensions: Dimensions): SinkMetrics {
    let metrics = this.#byDimensions.get(key);
    if (!metrics) {
      metrics = new SinkMetrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE, defaultDimensions: dimensions as Record<string, string> });
      this.#byDimensions.set(key, metrics);
    }
    return metrics;
  }

  override publishStoredMetrics(): this {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const set of pending) {
      const document = this.#documentOf(set);
      if (document) sink(document);
    }
    if (this.#direct) {
      this.#direct = false;
      super.publishStoredMetrics();
    }
    return this;
  }

  #documentOf({ metrics, key, values }: PendingSet): EmfDocument | undefined {
    let samples = 0;
    let content = key;
    for (const [name, list] of values) {
      samples += list.length;
      content += `\n${name}=${list.join(',')}`;
    }
    const remembered = this.#documents.get(content);
    if (remembered) return !metrics.sending ? undefined : { ...remembered, _aws: { ...remembered._aws, Timestamp: Date.now() } };
    for (const [name, list] of values) for (const value of list) metrics.addMetric(name, MetricUnit.Count, value);
    const document = metrics.takeDocument();
    if (document && samples <= MAX_REMEMBERED_VALUES) {
      if (this.#documents.size >= MAX_REMEMBERED_DOCUMENTS) this.#documents.delete(this.#documents.keys().next().value!);
      this.#documents.set(content, document);
    }
    return document;
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
