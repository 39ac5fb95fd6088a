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

/** One set of dimension values: its Powertools Metrics, its counts since the last flush, the documents it sent. */
interface DimensionSet {
  readonly metrics: SinkMetrics;
  /** Each metric's values since the last flush, in the order counted (emptied by the flush, kept for the next). */
  readonly values: Map<GatewayMetricName, number[]>;
  counted: boolean;
  /** Documents this set sent, by content (names and values), reused with a new timestamp. */
  readonly documents: Map<string, EmfDocument>;
}

/** A node of the sets' lookup: dimension name, then value, in the catalogue's order. */
interface SetNode {
  set?: DimensionSet;
  readonly next: Map<string, Map<string, SetNode>>;
}

/** Documents remembered per set; a few cover a function's steady traffic. */
const MAX_REMEMBERED_DOCUMENTS = 16;
/** Only small documents are remembered (a value list of Powertools' own maximum, 100, flushes early). */
const MAX_REMEMBERED_VALUES = 10;

/**
 * All of an invocation's metrics. One EMF document carries one set of dimension values, so counts
 * are kept per set (a Powertools Metrics per set, made on first use) and every set is flushed by
 * `publishStoredMetrics`, which the Powertools `logMetrics` middleware calls after each invocation.
 * A metric counted twice within one invocation is sent as Powertools sends it: its values as a
 * list, one sample each.
 *
 * The flush runs after every invocation, so it is kept cheap: counts wait in lists that live as
 * long as the function, found without building a key, and a set is serialized (by Powertools) only
 * the first time it counts what it counts: a warm webhook receiver sends the same
 * `WebhooksVerified: 1` document every invocation, which is then the remembered document with the
 * invocation's timestamp (bench/webhooks.ts measures the receiver's own overhead).
 */
class GatewayMetrics extends SinkMetrics {
  readonly #sets: SetNode = { next: new Map() };
  readonly #counted: DimensionSet[] = [];
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
    // Only the catalogue's dimensions, each with a value: an extra one would multiply the bill.
    let given = 0;
    for (const dimension in dimensions) if (Object.hasOwn(dimensions, dimension)) given += 1;
    if (given !== wanted.length || wanted.some((dimension) => !dimensions[dimension])) {
      const names = Object.keys(dimensions);
      throw new Error(`metric ${name} takes the dimensions ${wanted.join(', ') || 'none'}; got ${names.join(', ') || 'none'}`);
    }
    const set = this.#setOf(wanted, dimensions);
    if (!set.counted) {
      set.counted = true;
      this.#counted.push(set);
    }
    const values = set.values.get(name);
    if (values) values.push(value);
    else set.values.set(name, [value]);
  }

  #setOf(wanted: readonly MetricDimension[], dimensions: Dimensions): DimensionSet {
    let node = this.#sets;
    for (const dimension of wanted) {
      const value = dimensions[dimension]!;
      let byValue = node.next.get(dimension);
      if (!byValue) node.next.set(dimension, (byValue = new Map()));
      let child = byValue.get(value);
      if (!child) byValue.set(value, (child = { next: new Map() }));
      node = child;
    }
    if (!node.set) {
      const ordered = Object.fromEntries(wanted.map((dimension) => [dimension, dimensions[dimension]!]));
      node.set = {
        metrics: new SinkMetrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE, defaultDimensions: ordered }),
        values: new Map(),
        counted: false,
        documents: new Map(),
      };
    }
    return node.set;
  }

  override publishStoredMetrics(): this {
    for (let i = 0; i < this.#counted.length; i += 1) {
      const set = this.#counted[i]!;
      set.counted = false;
      const document = this.#documentOf(set);
      for (const list of set.values.values()) list.length = 0;
      if (document) sink(document);
    }
    this.#counted.length = 0;
    if (this.#direct) {
      this.#direct = false;
      super.publishStoredMetrics();
    }
    return this;
  }

  #documentOf(set: DimensionSet): EmfDocument | undefined {
    let samples = 0;
    let content = '';
    for (const [name, list] of set.values) {
      if (list.length === 0) continue;
      samples += list.length;
      content += `${name}=${list.length === 1 ? list[0] : list.join(',')};`;
    }
    const remembered = set.documents.get(content);
    if (remembered) return set.metrics.sending ? { ...remembered, _aws: { ...remembered._aws, Timestamp: Date.now() } } : undefined;
    for (const [name, list] of set.values) for (const value of list) set.metrics.addMetric(name, MetricUnit.Count, value);
    const document = set.metrics.takeDocument();
    if (document && samples <= MAX_REMEMBERED_VALUES) {
      if (set.documents.size >= MAX_REMEMBERED_DOCUMENTS) set.documents.delete(set.documents.keys().next().value!);
      set.documents.set(content, document);
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
  /** An account over one of its quotas (shared/tenants/quotas.ts) was refused. */
  quotaRefused: (kind: string) => metrics.count('QuotaRefusals', 1, { reason: kind }),
  /** A webhook event was fetched back from the platform before it was applied, or dropped because it could not be. */
  webhookConfirmed: (connector: ConnectorName, confirmed: boolean) => metrics.count(confirmed ? 'WebhookEventsConfirmed' : 'WebhookEventsUnconfirmed', 1, { connector }),
} as const;
