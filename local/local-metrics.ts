import type { EmfDocument } from '../shared/metrics/gateway-metrics';

/** One metric (name and dimension values) with what the handlers reported for it. */
export interface LocalMetric {
  name: string;
  dimensions: Record<string, string>;
  /** Every value reported, added up (counters). */
  sum: number;
  /** How many values were reported. */
  samples: number;
  /** The last value reported (levels: polls open, live conversations). */
  last: number;
}

/**
 * The local stand-in for CloudWatch's reading of the handlers' embedded-metric-format output: the
 * same EMF documents Lambda writes to its log, read back into metrics, served on
 * `GET /local/metrics` so a developer (and the tests) can see what the dashboard would.
 */
export class LocalMetrics {
  private readonly metrics = new Map<string, LocalMetric>();
  /** Every document as written, oldest first (the last 1,000). */
  readonly documents: EmfDocument[] = [];

  record(document: EmfDocument): void {
    this.documents.push(document);
    if (this.documents.length > 1000) this.documents.shift();
    const fields = document as unknown as Record<string, unknown>;
    for (const directive of document._aws.CloudWatchMetrics) {
      const dimensionNames = directive.Dimensions[0] ?? [];
      const dimensions = Object.fromEntries(dimensionNames.map((name) => [name, String(fields[name])]));
      for (const { Name } of directive.Metrics) {
        const raw = fields[Name];
        const values = (Array.isArray(raw) ? raw : [raw]).filter((value): value is number => typeof value === 'number');
        const key = JSON.stringify([directive.Namespace, Name, dimensions]);
        const metric = this.metrics.get(key) ?? { name: Name, dimensions, sum: 0, samples: 0, last: 0 };
        for (const value of values) {
          metric.sum += value;
          metric.samples += 1;
          metric.last = value;
        }
        this.metrics.set(key, metric);
      }
    }
  }

  list(): LocalMetric[] {
    return [...this.metrics.values()].map((metric) => ({ ...metric, dimensions: { ...metric.dimensions } }));
  }

  /** The sum of a metric over every dimension set that includes `dimensions`. */
  sum(name: string, dimensions: Record<string, string> = {}): number {
    return this.list()
      .filter((metric) => metric.name === name && Object.entries(dimensions).every(([key, value]) => metric.dimensions[key] === value))
      .reduce((total, metric) => total + metric.sum, 0);
  }
}
