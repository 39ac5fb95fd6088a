import type { RandomFaults } from '../sandbox/faults';
import type { ListAnswers } from '../sandbox/payment-simulator';
import type { RateLimit } from '../sandbox/rate-limit';
import type { Latency } from '../sandbox/simulator-server';
import { ChildProcessCalls } from './child-process-calls';
import type { SimulatorTotals, SyncedObject, SyncPlatform, SyncSimulatorCall } from './sync-simulators';

/** The payment and billing simulators in a child process (bench/sync-simulators.ts), driven over IPC. */
export class SyncPlatforms {
  private readonly child = new ChildProcessCalls<SyncSimulatorCall>(new URL('./sync-simulators.ts', import.meta.url));
  paymentUrl = '';
  billingUrl = '';

  private constructor() {}

  static async start(seed: number): Promise<SyncPlatforms> {
    const platforms = new SyncPlatforms();
    const started = (await platforms.child.call({ op: 'start', seed })) as { paymentUrl: string; billingUrl: string };
    platforms.paymentUrl = started.paymentUrl;
    platforms.billingUrl = started.billingUrl;
    return platforms;
  }

  /** The simulators' process (benchmarks read its CPU time). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  async seed(customers: number, payment: { live: RateLimit; test: RateLimit }, billing: { site: string; limit: RateLimit }): Promise<void> {
    await this.child.call({ op: 'seed', customers, payment, billing });
  }

  /** The payment platform's live mode alone: `customers` created `spacingSeconds` apart, a subscription, invoice, payment intent and charge each. */
  async seedPayment(customers: number, spacingSeconds: number, live: RateLimit): Promise<void> {
    await this.child.call({ op: 'seedPayment', customers, spacingSeconds, live });
  }

  /** The billing platform alone: one site at `limit`, `customers` customers with a subscription each. */
  async seedBilling(site: string, customers: number, limit: RateLimit): Promise<void> {
    await this.child.call({ op: 'seedBilling', site, customers, limit });
  }

  /** Users changing the billing site mid-sync: its `edits` oldest customers edited, `creates` customers (with a subscription) created. */
  async billingChurn(site: string, edits: number, creates: number): Promise<void> {
    await this.child.call({ op: 'billingChurn', site, edits, creates });
  }

  /** The billing site's live records' `resource_version`, by id. */
  billingVersions(site: string, object: 'customers' | 'subscriptions'): Promise<Record<string, number>> {
    return this.child.call({ op: 'billingVersions', site, object }) as Promise<Record<string, number>>;
  }

  async addPaymentKey(key: string): Promise<void> {
    await this.child.call({ op: 'addPaymentKey', key });
  }

  async addBillingKey(site: string, key: string): Promise<void> {
    await this.child.call({ op: 'addBillingKey', site, key });
  }

  /** Both platforms' answer time. */
  async setLatency(latency: Latency): Promise<void> {
    await this.child.call({ op: 'latency', latency });
  }

  async setRandomFaults(platform: SyncPlatform, random: RandomFaults | undefined): Promise<void> {
    await this.child.call({ op: 'randomFaults', platform, random });
  }

  totals(platform: SyncPlatform): Promise<SimulatorTotals> {
    return this.child.call({ op: 'totals', platform }) as Promise<SimulatorTotals>;
  }

  async resetMaxInFlight(platform: SyncPlatform): Promise<void> {
    await this.child.call({ op: 'resetMaxInFlight', platform });
  }

  async resetArrivals(platform: SyncPlatform): Promise<void> {
    await this.child.call({ op: 'resetArrivals', platform });
  }

  /** The payment platform's list pages answered, by how full (`ListAnswers`), since the last reset. */
  listAnswers(): Promise<Partial<Record<SyncedObject, ListAnswers>>> {
    return this.child.call({ op: 'listAnswers' }) as Promise<Partial<Record<SyncedObject, ListAnswers>>>;
  }

  async resetListAnswers(): Promise<void> {
    await this.child.call({ op: 'resetListAnswers' });
  }

  ids(platform: SyncPlatform, object: SyncedObject, site: string): Promise<string[]> {
    return this.child.call({ op: 'ids', platform, object, site }) as Promise<string[]>;
  }

  stop(): Promise<void> {
    return this.child.stop({ op: 'stop' });
  }
}
