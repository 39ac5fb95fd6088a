import { seededRandom } from './faults';
import { addMonths, BASE62, base62Id, RecordCollection, type SeedTiming } from './records';

/**
 * The billing platform's records as its API v2 answers them (the Billing API v2 reference; docs/platform-contracts.md, "Billing platform"),
 * kept per site, and a factory that makes realistic ones quickly. Timestamps are Unix seconds.
 * Like the real platform, some records have no `updated_at` at all (the key is absent).
 */

export const BILLING_SUBSCRIPTION_STATUSES = ['future', 'in_trial', 'active', 'non_renewing', 'paused', 'cancelled', 'transferred'] as const;
export type BillingSubscriptionStatus = (typeof BILLING_SUBSCRIPTION_STATUSES)[number];
export const BILLING_INVOICE_STATUSES = ['paid', 'posted', 'payment_due', 'not_paid', 'voided', 'pending'] as const;
export type BillingInvoiceStatus = (typeof BILLING_INVOICE_STATUSES)[number];
export const BILLING_TRANSACTION_STATUSES = ['in_progress', 'success', 'voided', 'failure', 'timeout', 'needs_attention', 'late_failure'] as const;
export type BillingTransactionStatus = (typeof BILLING_TRANSACTION_STATUSES)[number];
export const BILLING_TRANSACTION_TYPES = ['authorization', 'payment', 'refund', 'payment_reversal'] as const;
export type BillingTransactionType = (typeof BILLING_TRANSACTION_TYPES)[number];

interface Versioned {
  id: string;
  /** Absent on some records, as on the real platform. */
  updated_at?: number;
  /** Milliseconds; grows on every change. */
  resource_version: number;
  deleted: boolean;
}

export interface BillingCustomer extends Versioned {
  object: 'customer';
  first_name: string;
  last_name: string;
  email: string;
  auto_collection: 'on' | 'off';
  net_term_days: number;
  allow_direct_debit: boolean;
  taxability: 'taxable' | 'exempt';
  card_status: 'valid' | 'no_card';
  preferred_currency_code: string;
  channel: 'web';
  created_at: number;
}

export interface BillingSubscriptionItem {
  object: 'subscription_item';
  item_price_id: string;
  item_type: 'plan' | 'addon';
  quantity: number;
  unit_price: number;
  amount: number;
}

export interface BillingSubscription extends Versioned {
  object: 'subscription';
  customer_id: string;
  status: BillingSubscriptionStatus;
  currency_code: string;
  billing_period: number;
  billing_period_unit: 'month' | 'year';
  start_date?: number;
  trial_start?: number;
  trial_end?: number;
  current_term_start?: number;
  current_term_end?: number;
  next_billing_at?: number;
  started_at?: number;
  activated_at?: number;
  pause_date?: number;
  cancelled_at?: number;
  created_at: number;
  due_invoices_count: number;
  mrr: number;
  has_scheduled_changes: boolean;
  channel: 'web';
  subscription_items: BillingSubscriptionItem[];
}

export interface BillingInvoice extends Versioned {
  object: 'invoice';
  customer_id: string;
  subscription_id: string;
  recurring: boolean;
  status: BillingInvoiceStatus;
  price_type: 'tax_exclusive';
  date: number;
  due_date: number;
  net_term_days: number;
  total: number;
  amount_paid: number;
  amount_due: number;
  amount_adjusted: number;
  credits_applied: number;
  write_off_amount: number;
  paid_at?: number;
  dunning_status?: 'in_progress' | 'exhausted';
  currency_code: string;
  first_invoice: boolean;
  linked_payments: Array<{ txn_id: string; applied_amount: number; applied_at: number; txn_status: BillingTransactionStatus; txn_date: number; txn_amount: number }>;
}

export interface BillingTransaction extends Versioned {
  object: 'transaction';
  customer_id: string;
  subscription_id: string;
  type: BillingTransactionType;
  status: BillingTransactionStatus;
  payment_method: 'card';
  gateway: 'chargebee';
  id_at_gateway: string;
  masked_card_number: string;
  amount: number;
  amount_unused: number;
  currency_code: string;
  date: number;
  error_code?: string;
  error_text?: string;
  linked_invoices: Array<{ invoice_id: string; applied_amount: number; applied_at: number; invoice_date: number; invoice_total: number; invoice_status: BillingInvoiceStatus }>;
}

export interface BillingEvent {
  id: string;
  object: 'event';
  occurred_at: number;
  source: 'admin_console' | 'api' | 'scheduled_job' | 'system';
  api_version: 'v2';
  event_type: string;
  webhook_status: 'not_configured' | 'scheduled' | 'succeeded' | 're_scheduled' | 'failed';
  content: Record<string, unknown>;
}

/** The list endpoints, by their path word. */
export const BILLING_OBJECTS = ['customers', 'subscriptions', 'invoices', 'transactions'] as const;
export type BillingObjectName = (typeof BILLING_OBJECTS)[number];

export interface BillingRecordOf {
  customers: BillingCustomer;
  subscriptions: BillingSubscription;
  invoices: BillingInvoice;
  transactions: BillingTransaction;
}

/** The resource name each row is wrapped in (`{customer: {...}}`). */
export const BILLING_SINGULAR = {
  customers: 'customer',
  subscriptions: 'subscription',
  invoices: 'invoice',
  transactions: 'transaction',
  events: 'event',
} as const;

export type BillingOrdering = 'created_at' | 'updated_at' | 'date' | 'occurred_at';

function collection<T extends { id: string }>(fields: BillingOrdering[]): RecordCollection<T, BillingOrdering> {
  const orderings = {} as Record<BillingOrdering, (record: T) => number | undefined>;
  for (const field of fields) orderings[field] = (record) => (record as unknown as Record<string, number | undefined>)[field];
  return new RecordCollection<T, BillingOrdering>(orderings);
}

/** One site's data. Test and live are separate sites on this platform, so there is no mode. */
export class BillingSiteData {
  readonly customers = collection<BillingCustomer>(['created_at', 'updated_at']);
  readonly subscriptions = collection<BillingSubscription>(['created_at', 'updated_at']);
  readonly invoices = collection<BillingInvoice>(['date', 'updated_at']);
  readonly transactions = collection<BillingTransaction>(['date', 'updated_at']);
  readonly events = collection<BillingEvent>(['occurred_at']);
  /** Counters behind the readable ids (`cust_00042`). */
  readonly counters = { customers: 0, subscriptions: 0, invoices: 0, transactions: 0 };

  constructor(readonly site: string) {}

  collection<K extends BillingObjectName>(name: K): RecordCollection<BillingRecordOf[K], BillingOrdering> {
    return this[name] as unknown as RecordCollection<BillingRecordOf[K], BillingOrdering>;
  }

  nextId(name: BillingObjectName): string {
    this.counters[name] += 1;
    const prefix = { customers: 'cust', subscriptions: 'sub', invoices: 'inv', transactions: 'txn' }[name];
    return `${prefix}_${String(this.counters[name]).padStart(5, '0')}`;
  }
}

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'Tim'];
const LAST_NAMES = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'Lee'];

/** Seeded status mix: every status appears within the first seven, most are active. */
const STATUS_MIX: BillingSubscriptionStatus[] = [
  'active', 'in_trial', 'non_renewing', 'cancelled', 'paused', 'future', 'transferred',
  'active', 'active', 'active', 'in_trial', 'active', 'cancelled', 'active', 'active', 'non_renewing', 'active', 'active', 'active', 'active',
];

const PLANS = [
  { item_price_id: 'starter-USD-Monthly', unit_price: 1900, unit: 'month' },
  { item_price_id: 'growth-USD-Monthly', unit_price: 4900, unit: 'month' },
  { item_price_id: 'scale-USD-Monthly', unit_price: 19900, unit: 'month' },
  { item_price_id: 'growth-USD-Yearly', unit_price: 49000, unit: 'year' },
] as const;
const ADDON = { item_price_id: 'extra-seats-USD-Monthly', unit_price: 500 } as const;

const DAY = 86_400;

export interface BillingSeedOptions extends SeedTiming {
  /** Fraction (0..1) of seeded records that have no `updated_at`, as on the real platform. Default 0.01. */
  withoutUpdatedAt?: number;
}

/** Whether the i-th seeded record lacks `updated_at`: exactly floor(n x fraction) of n do, spread evenly. */
export function lacksUpdatedAt(index: number, fraction: number): boolean {
  return Math.floor((index + 1) * fraction) > Math.floor(index * fraction);
}

/** Makes records with names, unique emails and plausible amounts and dates. */
export class BillingRecordFactory {
  readonly random: () => number;
  private emailCounter = 0;
  private eventCounter = 0;

  constructor(seed: number) {
    this.random = seededRandom(seed);
  }

  token(length: number): string {
    return base62Id('', length, this.random);
  }

  /** Event ids grow with time (a fixed-width base62 sequence, then noise), so same-second events keep their order. */
  eventId(): string {
    this.eventCounter += 1;
    let sequence = '';
    for (let n = this.eventCounter; sequence.length < 8; n = Math.floor(n / 62)) sequence = BASE62[n % 62] + sequence;
    return `ev_${sequence}${this.token(8)}`;
  }

  pick<T>(values: readonly T[]): T {
    return values[Math.floor(this.random() * values.length)] as T;
  }

  statusFor(index: number, statuses?: readonly BillingSubscriptionStatus[]): BillingSubscriptionStatus {
    const mix = statuses && statuses.length > 0 ? statuses : STATUS_MIX;
    return mix[index % mix.length] as BillingSubscriptionStatus;
  }

  /** `updated_at` some time after creation (or absent), and the matching resource version. */
  version(createdAt: number, nowSeconds: number, withoutUpdatedAt: boolean): Pick<Versioned, 'updated_at' | 'resource_version'> {
    if (withoutUpdatedAt) return { resource_version: createdAt * 1000 };
    const updatedAt = Math.min(nowSeconds, createdAt + Math.floor(this.random() * Math.max(0, Math.min(30 * DAY, nowSeconds - createdAt))));
    return { updated_at: updatedAt, resource_version: updatedAt * 1000 + Math.floor(this.random() * 1000) };
  }

  customer(data: BillingSiteData, createdAt: number, version: Pick<Versioned, 'updated_at' | 'resource_version'>, fields: Partial<BillingCustomer> = {}): BillingCustomer {
    const first = this.pick(FIRST_NAMES);
    const last = this.pick(LAST_NAMES);
    this.emailCounter += 1;
    return {
      id: data.nextId('customers'),
      object: 'customer',
      first_name: first,
      last_name: last,
      email: `${first}.${last}.${this.emailCounter}@example.com`.toLowerCase(),
      auto_collection: 'on',
      net_term_days: 0,
      allow_direct_debit: false,
      taxability: 'taxable',
      card_status: 'valid',
      preferred_currency_code: 'USD',
      channel: 'web',
      created_at: createdAt,
      ...version,
      deleted: false,
      ...fields,
    };
  }

  subscription(
    data: BillingSiteData,
    customerId: string,
    status: BillingSubscriptionStatus,
    createdAt: number,
    nowSeconds: number,
    version: Pick<Versioned, 'updated_at' | 'resource_version'>,
    fields: Partial<BillingSubscription> = {},
  ): BillingSubscription {
    const plan = this.pick(PLANS);
    const months = plan.unit === 'year' ? 12 : 1;
    const items: BillingSubscriptionItem[] = [
      { object: 'subscription_item', item_price_id: plan.item_price_id, item_type: 'plan', quantity: 1, unit_price: plan.unit_price, amount: plan.unit_price },
    ];
    if (this.random() < 0.2) {
      const quantity = 1 + Math.floor(this.random() * 5);
      items.push({ object: 'subscription_item', item_price_id: ADDON.item_price_id, item_type: 'addon', quantity, unit_price: ADDON.unit_price, amount: ADDON.unit_price * quantity });
    }
    const total = items.reduce((sum, item) => sum + item.amount, 0);
    let termStart = createdAt;
    for (let next = addMonths(termStart, months); next <= nowSeconds; next = addMonths(termStart, months)) termStart = next;
    const termEnd = addMonths(termStart, months);
    const dates: Partial<BillingSubscription> = {};
    switch (status) {
      case 'future':
        dates.start_date = nowSeconds + 7 * DAY;
        dates.next_billing_at = nowSeconds + 7 * DAY;
        break;
      case 'in_trial':
        dates.trial_start = createdAt;
        dates.trial_end = Math.max(createdAt + 14 * DAY, nowSeconds + 3 * DAY);
        dates.started_at = createdAt;
        dates.next_billing_at = dates.trial_end;
        break;
      case 'active':
        Object.assign(dates, { started_at: createdAt, activated_at: createdAt, current_term_start: termStart, current_term_end: termEnd, next_billing_at: termEnd });
        break;
      case 'non_renewing':
        // Cancels at the end of the term: no next billing.
        Object.assign(dates, { started_at: createdAt, activated_at: createdAt, current_term_start: termStart, current_term_end: termEnd, cancelled_at: termEnd });
        break;
      case 'paused':
        Object.assign(dates, { started_at: createdAt, activated_at: createdAt, current_term_start: termStart, current_term_end: termEnd, pause_date: Math.min(nowSeconds, termStart + DAY) });
        break;
      case 'cancelled':
      case 'transferred':
        Object.assign(dates, { started_at: createdAt, activated_at: createdAt, cancelled_at: Math.min(nowSeconds, createdAt + Math.floor(this.random() * 60 * DAY) + DAY) });
        break;
    }
    return {
      id: data.nextId('subscriptions'),
      object: 'subscription',
      customer_id: customerId,
      status,
      currency_code: 'USD',
      billing_period: 1,
      billing_period_unit: plan.unit,
      ...dates,
      created_at: createdAt,
      ...version,
      deleted: false,
      due_invoices_count: 0,
      mrr: status === 'active' || status === 'non_renewing' ? Math.round(total / months) : 0,
      has_scheduled_changes: false,
      channel: 'web',
      subscription_items: items,
      ...fields,
    };
  }

  /** An invoice and the payment transaction that paid it (or failed to). */
  invoiceWithPayment(
    data: BillingSiteData,
    subscription: BillingSubscription,
    paid: boolean,
    date: number,
    version: Pick<Versioned, 'updated_at' | 'resource_version'>,
  ): { invoice: BillingInvoice; transaction: BillingTransaction } {
    const total = subscription.subscription_items.reduce((sum, item) => sum + item.amount, 0);
    const invoiceId = data.nextId('invoices');
    const transactionId = data.nextId('transactions');
    const status: BillingInvoiceStatus = paid ? 'paid' : 'payment_due';
    const transactionStatus: BillingTransactionStatus = paid ? 'success' : 'failure';
    const invoice: BillingInvoice = {
      id: invoiceId,
      object: 'invoice',
      customer_id: subscription.customer_id,
      subscription_id: subscription.id,
      recurring: true,
      status,
      price_type: 'tax_exclusive',
      date,
      due_date: date,
      net_term_days: 0,
      total,
      amount_paid: paid ? total : 0,
      amount_due: paid ? 0 : total,
      amount_adjusted: 0,
      credits_applied: 0,
      write_off_amount: 0,
      ...(paid ? { paid_at: date } : { dunning_status: 'in_progress' as const }),
      currency_code: subscription.currency_code,
      first_invoice: date === subscription.created_at,
      ...version,
      deleted: false,
      linked_payments: [{ txn_id: transactionId, applied_amount: paid ? total : 0, applied_at: date, txn_status: transactionStatus, txn_date: date, txn_amount: total }],
    };
    const transaction: BillingTransaction = {
      id: transactionId,
      object: 'transaction',
      customer_id: subscription.customer_id,
      subscription_id: subscription.id,
      type: 'payment',
      status: transactionStatus,
      payment_method: 'card',
      gateway: 'chargebee',
      id_at_gateway: `sim_${this.token(14)}`,
      masked_card_number: '************4242',
      amount: total,
      amount_unused: 0,
      currency_code: subscription.currency_code,
      date,
      ...(paid ? {} : { error_code: 'card_declined', error_text: 'Your card was declined.' }),
      ...version,
      deleted: false,
      linked_invoices: [{ invoice_id: invoiceId, applied_amount: paid ? total : 0, applied_at: date, invoice_date: date, invoice_total: total, invoice_status: status }],
    };
    return { invoice, transaction };
  }
}
