import { seededRandom } from './faults';
import { addMonths, base62Id, RecordCollection } from './records';

export { addMonths, seededCreated, type SeedTiming } from './records';

/**
 * The payment platform's records as its API answers them (the Payments API reference; docs/platform-contracts.md, "Payment platform"),
 * and a factory that makes realistic ones quickly: 10,000 customers in a few milliseconds.
 */

export type PaymentMode = 'test' | 'live';

export interface PaymentCustomer {
  id: string;
  object: 'customer';
  email: string | null;
  name: string | null;
  description: string | null;
  created: number;
  currency: string | null;
  balance: number;
  delinquent: boolean;
  livemode: boolean;
  metadata: Record<string, string>;
}

export interface PaymentPrice {
  id: string;
  object: 'price';
  active: boolean;
  nickname: string;
  product: string;
  unit_amount: number;
  currency: string;
  type: 'recurring';
  recurring: { interval: 'month' | 'year'; interval_count: number };
  livemode: boolean;
}

export interface PaymentSubscriptionItem {
  id: string;
  object: 'subscription_item';
  created: number;
  quantity: number;
  subscription: string;
  /** Newer API versions moved the period into the items; the top-level copy is kept too. */
  current_period_start: number;
  current_period_end: number;
  price: PaymentPrice;
}

export const PAYMENT_SUBSCRIPTION_STATUSES = [
  'active',
  'canceled',
  'incomplete',
  'incomplete_expired',
  'past_due',
  'paused',
  'trialing',
  'unpaid',
] as const;
export type PaymentSubscriptionStatus = (typeof PAYMENT_SUBSCRIPTION_STATUSES)[number];

export interface PaymentSubscription {
  id: string;
  object: 'subscription';
  customer: string;
  status: PaymentSubscriptionStatus;
  created: number;
  start_date: number;
  current_period_start: number;
  current_period_end: number;
  cancel_at_period_end: boolean;
  cancel_at: number | null;
  canceled_at: number | null;
  ended_at: number | null;
  trial_start: number | null;
  trial_end: number | null;
  currency: string;
  collection_method: 'charge_automatically';
  latest_invoice: string | null;
  livemode: boolean;
  metadata: Record<string, string>;
  items: { object: 'list'; data: PaymentSubscriptionItem[]; has_more: false; url: string };
}

export type PaymentInvoiceStatus = 'draft' | 'open' | 'paid' | 'uncollectible' | 'void';

export interface PaymentInvoice {
  id: string;
  object: 'invoice';
  customer: string;
  customer_email: string | null;
  subscription: string | null;
  status: PaymentInvoiceStatus;
  number: string;
  amount_due: number;
  amount_paid: number;
  amount_remaining: number;
  currency: string;
  created: number;
  period_start: number;
  period_end: number;
  due_date: number | null;
  next_payment_attempt: number | null;
  attempt_count: number;
  billing_reason: 'subscription_create' | 'subscription_cycle';
  collection_method: 'charge_automatically';
  payment_intent: string | null;
  livemode: boolean;
  metadata: Record<string, string>;
}

export type PaymentIntentStatus = 'succeeded' | 'requires_payment_method' | 'processing' | 'canceled';

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  customer: string;
  amount: number;
  amount_received: number;
  currency: string;
  status: PaymentIntentStatus;
  created: number;
  invoice: string | null;
  latest_charge: string | null;
  livemode: boolean;
  metadata: Record<string, string>;
}

export interface PaymentCharge {
  id: string;
  object: 'charge';
  customer: string;
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  currency: string;
  status: 'succeeded' | 'pending' | 'failed';
  paid: boolean;
  captured: boolean;
  refunded: boolean;
  failure_code: string | null;
  failure_message: string | null;
  created: number;
  invoice: string | null;
  payment_intent: string | null;
  livemode: boolean;
  metadata: Record<string, string>;
}

export interface PaymentEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  livemode: boolean;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
}

/** The list endpoints, by their path word. */
export const PAYMENT_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'] as const;
export type PaymentObjectName = (typeof PAYMENT_OBJECTS)[number];

export interface PaymentRecordOf {
  customers: PaymentCustomer;
  subscriptions: PaymentSubscription;
  invoices: PaymentInvoice;
  payment_intents: PaymentIntent;
  charges: PaymentCharge;
}

/** What every listed record has: lists sort on `created`, filters read other fields by name. */
export interface ListedRecord {
  id: string;
  created: number;
}

/** A record's field by name, so one filter serves every kind of record. */
export function fieldOf(record: ListedRecord, name: string): unknown {
  return (record as unknown as Record<string, unknown>)[name];
}

/** Every list is newest first on `created`, so one ordering serves all. */
export type PaymentOrdering = 'created';
type Collection<T extends { id: string }> = RecordCollection<T, PaymentOrdering>;

function byCreated<T extends { id: string; created: number }>(): Collection<T> {
  return new RecordCollection<T, PaymentOrdering>({ created: (record) => record.created });
}

/** One mode's data (test or live): the platform keeps them apart, and so does the simulator. */
export class PaymentDataset {
  readonly customers = byCreated<PaymentCustomer>();
  readonly subscriptions = byCreated<PaymentSubscription>();
  readonly invoices = byCreated<PaymentInvoice>();
  readonly payment_intents = byCreated<PaymentIntent>();
  readonly charges = byCreated<PaymentCharge>();
  readonly events = byCreated<PaymentEvent>();
  /** Deleted customers: retrieving one answers `{id, object, deleted: true}`, and it still works as a cursor. */
  readonly deletedCustomers = new Map<string, PaymentCustomer>();

  constructor(readonly mode: PaymentMode) {}

  collection<K extends PaymentObjectName>(name: K): Collection<PaymentRecordOf[K]> {
    return this[name] as unknown as Collection<PaymentRecordOf[K]>;
  }

  /** Any list (events included) seen only as its shared shape, for paging and filtering. */
  listed(name: PaymentObjectName | 'events'): Collection<ListedRecord> {
    return this[name] as unknown as Collection<ListedRecord>;
  }
}

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'Tim'];
const LAST_NAMES = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'Lee'];

/** Seeded status mix: every status appears within the first eight, most are active. */
const STATUS_MIX: PaymentSubscriptionStatus[] = [
  'active', 'trialing', 'past_due', 'canceled', 'unpaid', 'incomplete', 'incomplete_expired', 'paused',
  'active', 'active', 'active', 'trialing', 'active', 'past_due', 'active', 'canceled', 'active', 'active', 'active', 'active',
];

const DAY = 86_400;

/** Makes records: ids, names, unique emails, a small price catalog per mode. */
export class PaymentRecordFactory {
  readonly random: () => number;
  private emailCounter = 0;
  private invoiceCounter = 0;
  private readonly prices = new Map<PaymentMode, PaymentPrice[]>();

  constructor(seed: number) {
    this.random = seededRandom(seed);
  }

  id(prefix: string, length = 24): string {
    return base62Id(prefix, length, this.random);
  }

  pick<T>(values: readonly T[]): T {
    return values[Math.floor(this.random() * values.length)] as T;
  }

  statusFor(index: number, statuses?: readonly PaymentSubscriptionStatus[]): PaymentSubscriptionStatus {
    const mix = statuses && statuses.length > 0 ? statuses : STATUS_MIX;
    return mix[index % mix.length] as PaymentSubscriptionStatus;
  }

  catalog(mode: PaymentMode): PaymentPrice[] {
    let prices = this.prices.get(mode);
    if (!prices) {
      const livemode = mode === 'live';
      const price = (nickname: string, unit_amount: number, interval: 'month' | 'year'): PaymentPrice => ({
        id: this.id('price_'),
        object: 'price',
        active: true,
        nickname,
        product: this.id('prod_', 14),
        unit_amount,
        currency: 'usd',
        type: 'recurring',
        recurring: { interval, interval_count: 1 },
        livemode,
      });
      prices = [price('Starter', 1900, 'month'), price('Growth', 4900, 'month'), price('Scale', 19900, 'month'), price('Growth (yearly)', 49000, 'year')];
      this.prices.set(mode, prices);
    }
    return prices;
  }

  customer(mode: PaymentMode, created: number, fields: Partial<PaymentCustomer> = {}): PaymentCustomer {
    const first = this.pick(FIRST_NAMES);
    const last = this.pick(LAST_NAMES);
    this.emailCounter += 1;
    return {
      id: this.id('cus_', 14),
      object: 'customer',
      email: `${first}.${last}.${this.emailCounter}@example.com`.toLowerCase(),
      name: `${first} ${last}`,
      description: null,
      created,
      currency: 'usd',
      balance: 0,
      delinquent: false,
      livemode: mode === 'live',
      metadata: {},
      ...fields,
    };
  }

  subscription(
    customer: PaymentCustomer,
    status: PaymentSubscriptionStatus,
    created: number,
    nowSeconds: number,
    fields: Partial<PaymentSubscription> = {},
  ): PaymentSubscription {
    const mode: PaymentMode = customer.livemode ? 'live' : 'test';
    const price = this.pick(this.catalog(mode));
    const months = price.recurring.interval === 'year' ? 12 : 1;
    const id = this.id('sub_');
    const ended = status === 'canceled' || status === 'incomplete_expired';
    const endedAt = ended ? Math.min(nowSeconds, created + Math.floor(this.random() * 60 * DAY) + DAY) : null;
    // The current period is the one containing now (or the end, for ended subscriptions).
    const reference = endedAt ?? nowSeconds;
    let periodStart = created;
    for (let next = addMonths(periodStart, months); next <= reference; next = addMonths(periodStart, months)) periodStart = next;
    const periodEnd = addMonths(periodStart, months);
    const trialing = status === 'trialing';
    return {
      id,
      object: 'subscription',
      customer: customer.id,
      status,
      created,
      start_date: created,
      current_period_start: periodStart,
      current_period_end: periodEnd,
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: status === 'canceled' ? endedAt : null,
      ended_at: endedAt,
      trial_start: trialing ? created : null,
      trial_end: trialing ? Math.max(created + 14 * DAY, nowSeconds + 3 * DAY) : null,
      currency: price.currency,
      collection_method: 'charge_automatically',
      latest_invoice: null,
      livemode: customer.livemode,
      metadata: {},
      items: {
        object: 'list',
        data: [
          {
            id: this.id('si_', 14),
            object: 'subscription_item',
            created,
            quantity: 1,
            subscription: id,
            current_period_start: periodStart,
            current_period_end: periodEnd,
            price,
          },
        ],
        has_more: false,
        url: `/v1/subscription_items?subscription=${id}`,
      },
      ...fields,
    };
  }

  /** An invoice with the payment intent and charge that paid it (or failed to). */
  invoiceChain(
    subscription: PaymentSubscription,
    customer: PaymentCustomer | undefined,
    status: PaymentInvoiceStatus,
    periodStart: number,
    nowSeconds: number,
  ): { invoice: PaymentInvoice; paymentIntent?: PaymentIntent; charge?: PaymentCharge } {
    const item = subscription.items.data[0];
    const amount = subscription.status === 'trialing' ? 0 : (item?.price.unit_amount ?? 0) * (item?.quantity ?? 1);
    const months = item?.price.recurring.interval === 'year' ? 12 : 1;
    const created = Math.min(periodStart, nowSeconds);
    const livemode = subscription.livemode;
    this.invoiceCounter += 1;
    const invoice: PaymentInvoice = {
      id: this.id('in_'),
      object: 'invoice',
      customer: subscription.customer,
      customer_email: customer?.email ?? null,
      subscription: subscription.id,
      status,
      number: `SIM-${String(this.invoiceCounter).padStart(6, '0')}`,
      amount_due: amount,
      amount_paid: status === 'paid' ? amount : 0,
      amount_remaining: status === 'paid' || status === 'void' ? 0 : amount,
      currency: subscription.currency,
      created,
      period_start: periodStart,
      period_end: addMonths(periodStart, months),
      due_date: null,
      next_payment_attempt: status === 'open' ? created + 3 * DAY : null,
      attempt_count: status === 'open' || status === 'uncollectible' ? 1 : status === 'paid' ? 1 : 0,
      billing_reason: periodStart === subscription.created ? 'subscription_create' : 'subscription_cycle',
      collection_method: 'charge_automatically',
      payment_intent: null,
      livemode,
      metadata: {},
    };
    if (amount === 0 || (status !== 'paid' && status !== 'open' && status !== 'uncollectible')) return { invoice };

    const succeeded = status === 'paid';
    const paymentIntent: PaymentIntent = {
      id: this.id('pi_'),
      object: 'payment_intent',
      customer: subscription.customer,
      amount,
      amount_received: succeeded ? amount : 0,
      currency: subscription.currency,
      status: succeeded ? 'succeeded' : 'requires_payment_method',
      created,
      invoice: invoice.id,
      latest_charge: null,
      livemode,
      metadata: {},
    };
    const charge: PaymentCharge = {
      id: this.id('ch_'),
      object: 'charge',
      customer: subscription.customer,
      amount,
      amount_captured: succeeded ? amount : 0,
      amount_refunded: 0,
      currency: subscription.currency,
      status: succeeded ? 'succeeded' : 'failed',
      paid: succeeded,
      captured: succeeded,
      refunded: false,
      failure_code: succeeded ? null : 'card_declined',
      failure_message: succeeded ? null : 'Your card was declined.',
      created,
      invoice: invoice.id,
      payment_intent: paymentIntent.id,
      livemode,
      metadata: {},
    };
    paymentIntent.latest_charge = charge.id;
    invoice.payment_intent = paymentIntent.id;
    return { invoice, paymentIntent, charge };
  }
}

/** What the latest invoice of a subscription in this status looks like. */
export function latestInvoiceStatus(status: PaymentSubscriptionStatus): PaymentInvoiceStatus {
  switch (status) {
    case 'past_due':
    case 'incomplete':
      return 'open';
    case 'unpaid':
      return 'uncollectible';
    case 'incomplete_expired':
      return 'void';
    default:
      return 'paid';
  }
}
