import { startBillingSimulator, type BillingSimulator } from '../sandbox/billing-simulator';
import type { RandomFaults } from '../sandbox/faults';
import { startPaymentSimulator, type PaymentSimulator } from '../sandbox/payment-simulator';
import type { RateLimit } from '../sandbox/rate-limit';
import type { Latency, RunningSimulator } from '../sandbox/simulator-server';
import { answerCalls } from './child-process-calls';

/**
 * The payment and billing simulators in their own process for `npm run bench -- sync`, so the
 * platforms' work (answering 100 pages a second, seeding) does not share the gateway's event loop,
 * as it would not in production. The bench drives them over the IPC channel (`SyncPlatforms` in
 * bench/sync-platforms.ts).
 */

export type SyncPlatform = 'payment' | 'billing';
/** Billing has customers and subscriptions only. */
export type SyncedObject = 'customers' | 'subscriptions' | 'invoices' | 'payment_intents' | 'charges';

export type SyncSimulatorCall =
  | { op: 'start'; seed: number }
  /** Payment: per-mode limits and records (customers, one subscription each, in each mode; live mode an invoice, payment intent and charge a subscription too); billing: one site, its limit and records. */
  | { op: 'seed'; customers: number; payment: { live: RateLimit; test: RateLimit }; billing: { site: string; limit: RateLimit } }
  /** Payment live mode only: customers created `spacingSeconds` apart up to now, one subscription each, an invoice a subscription with its payment intent and charge; the live limit. */
  | { op: 'seedPayment'; customers: number; spacingSeconds: number; live: RateLimit }
  /** Billing only: one site, its limit, `customers` customers with a subscription each. */
  | { op: 'seedBilling'; site: string; customers: number; limit: RateLimit }
  /** Billing: `edits` of the site's oldest customers (an offset's page the listing has passed) and `creates` new customers with a subscription each, as users change a site mid-sync. */
  | { op: 'billingChurn'; site: string; edits: number; creates: number }
  /** Billing: each live (not deleted) record's `resource_version`, by id. */
  | { op: 'billingVersions'; site: string; object: 'customers' | 'subscriptions' }
  | { op: 'addPaymentKey'; key: string }
  | { op: 'addBillingKey'; site: string; key: string }
  | { op: 'latency'; latency: Latency }
  | { op: 'randomFaults'; platform: SyncPlatform; random: RandomFaults | undefined }
  | { op: 'totals'; platform: SyncPlatform }
  | { op: 'resetMaxInFlight'; platform: SyncPlatform }
  /** Forgets the requests' arrivals so far (`SimulatorTotals.arrivals` counts from here). */
  | { op: 'resetArrivals'; platform: SyncPlatform }
  /** The payment platform's list pages answered by how full, since the last `resetListAnswers`. */
  | { op: 'listAnswers' }
  | { op: 'resetListAnswers' }
  /** The ids the platform holds (live mode; billing: not deleted) for the bench's missing-record count. */
  | { op: 'ids'; platform: SyncPlatform; object: SyncedObject; site: string }
  | { op: 'stop' };

export interface SimulatorTotals {
  requests: number;
  /** 429s served by the rate limit (injected faults not included). */
  rateLimited: number;
  maxInFlight: number;
  /** Injected faults served so far. */
  faultsServed: number;
  /** Requests that arrived since the last `resetArrivals`, and when the first and the last arrived (milliseconds, the simulators' clock). */
  arrivals: { requests: number; firstMs?: number; lastMs?: number };
}

let payment: PaymentSimulator | undefined;
let billing: BillingSimulator | undefined;

const simulator = (platform: SyncPlatform): RunningSimulator & { rateLimited(): number } => (platform === 'payment' ? payment! : billing!);

async function handle(call: SyncSimulatorCall): Promise<unknown> {
  switch (call.op) {
    case 'start':
      [payment, billing] = await Promise.all([startPaymentSimulator({ seed: call.seed }), startBillingSimulator({ seed: call.seed })]);
      return { paymentUrl: payment.url, billingUrl: billing.url };
    case 'seed': {
      payment!.setRateLimit(call.payment.live, { mode: 'live' });
      payment!.setRateLimit(call.payment.test, { mode: 'test' });
      for (const mode of ['live', 'test'] as const) {
        payment!.seedCustomers(call.customers, { mode });
        payment!.seedSubscriptions({ mode, perCustomer: 1 });
      }
      // Live mode also has an invoice a subscription, each with its payment intent and charge (a connection listing four objects).
      payment!.seedInvoices({ mode: 'live', perSubscription: 1 });
      const site = billing!.addSite(call.billing.site);
      billing!.setRateLimit(call.billing.limit);
      site.seedCustomers(call.customers);
      site.seedSubscriptions({ perCustomer: 1 });
      return undefined;
    }
    case 'seedPayment':
      payment!.setRateLimit(call.live, { mode: 'live' });
      payment!.seedCustomers(call.customers, { mode: 'live', spacingSeconds: call.spacingSeconds });
      payment!.seedSubscriptions({ mode: 'live', perCustomer: 1 });
      payment!.seedInvoices({ mode: 'live', perSubscription: 1 });
      return undefined;
    case 'seedBilling': {
      const site = billing!.addSite(call.site);
      billing!.setRateLimit(call.limit);
      site.seedCustomers(call.customers);
      site.seedSubscriptions({ perCustomer: 1 });
      return undefined;
    }
    case 'billingChurn': {
      const site = billing!.site(call.site);
      billing!.advance(1_000);
      for (const customer of site.data.customers.sorted('created_at').slice(0, call.edits)) site.update('customers', customer.id, { first_name: 'Edited' });
      for (let n = 0; n < call.creates; n += 1) site.createSubscription(site.createCustomer().record.id);
      return undefined;
    }
    case 'billingVersions':
      return Object.fromEntries(
        [...billing!.site(call.site).data[call.object].values()].filter((record) => !record.deleted).map((record) => [record.id, record.resource_version]),
      );
    case 'addPaymentKey':
      payment!.addApiKey(call.key, { access: 'read' });
      return undefined;
    case 'addBillingKey':
      billing!.addApiKey(call.site, call.key, { type: 'read-only' });
      return undefined;
    case 'latency':
      payment!.setLatency(call.latency);
      billing!.setLatency(call.latency);
      return undefined;
    case 'randomFaults':
      simulator(call.platform).faults.setRandom(call.random);
      return undefined;
    case 'totals': {
      const running = simulator(call.platform);
      const totals: SimulatorTotals = {
        requests: running.totalRequests(),
        rateLimited: running.rateLimited(),
        maxInFlight: running.maxInFlight(),
        faultsServed: [...running.faults.served.values()].reduce((a, b) => a + b, 0),
        arrivals: running.arrivals(),
      };
      return totals;
    }
    case 'resetMaxInFlight':
      simulator(call.platform).resetMaxInFlight();
      return undefined;
    case 'resetArrivals':
      simulator(call.platform).resetArrivals();
      return undefined;
    case 'listAnswers':
      return payment!.listAnswers();
    case 'resetListAnswers':
      payment!.resetListAnswers();
      return undefined;
    case 'ids':
      return call.platform === 'payment'
        ? [...payment!.state.live[call.object].values()].map((record) => record.id)
        : [...billing!.site(call.site).data[call.object as 'customers' | 'subscriptions'].values()].filter((record) => !record.deleted).map((record) => record.id);
    case 'stop':
      await Promise.all([payment?.stop(), billing?.stop()]);
      setImmediate(() => process.exit(0));
      return undefined;
  }
}

answerCalls(handle);
