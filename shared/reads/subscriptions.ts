import type { NormalisedInvoice, NormalisedSubscription, SubscriptionState } from '../sync/normalised';
import { timeOf, type PlaybookConnector, type ReadRecord } from './read-record';

/**
 * Which subscription is "the customer's subscription", when the next payment falls due, and the
 * customer's tier. Pure: the I/O layer hands in the records it read.
 */

type Subscription = ReadRecord<NormalisedSubscription>;
type Invoice = ReadRecord<NormalisedInvoice>;

/** States in which a subscription still runs: the customer has (or is about to lose) service. */
export const CURRENT_STATES: ReadonlySet<SubscriptionState> = new Set(['active', 'trialing', 'non_renewing', 'past_due']);

export function isCurrent(subscription: NormalisedSubscription): boolean {
  return CURRENT_STATES.has(subscription.state);
}

/**
 * Set to end at its period end: `non_renewing` on either platform, or a cancellation already asked
 * for on a subscription that still runs (e.g. a trial cancelled before it converts).
 */
export function isCancelling(subscription: NormalisedSubscription): boolean {
  return subscription.state === 'non_renewing' || (isCurrent(subscription) && subscription.cancelledAt !== undefined);
}

/**
 * The customer's current subscription: among the running ones, an `active` one first, then the
 * latest period end (unknown ends last), then the latest start, then the id (stable answers).
 */
export function currentSubscription(subscriptions: readonly Subscription[]): Subscription | undefined {
  const running = subscriptions.filter((subscription) => isCurrent(subscription.body));
  return running.sort(compareForCurrent)[0];
}

function compareForCurrent(a: Subscription, b: Subscription): number {
  const activeFirst = Number(b.body.state === 'active') - Number(a.body.state === 'active');
  if (activeFirst !== 0) return activeFirst;
  const byPeriodEnd = laterFirst(a.body.currentPeriodEnd, b.body.currentPeriodEnd);
  if (byPeriodEnd !== 0) return byPeriodEnd;
  const byStart = laterFirst(a.body.createdAt, b.body.createdAt);
  if (byStart !== 0) return byStart;
  return a.body.id < b.body.id ? -1 : a.body.id > b.body.id ? 1 : 0;
}

function laterFirst(a: string | undefined, b: string | undefined): number {
  const ta = timeOf(a) ?? -Infinity;
  const tb = timeOf(b) ?? -Infinity;
  return ta === tb ? 0 : tb > ta ? 1 : -1;
}

/** Why a customer has no current subscription. */
export type NoSubscriptionReason = 'no_subscriptions' | 'none_current';

export function noSubscriptionReason(subscriptions: readonly Subscription[]): NoSubscriptionReason {
  return subscriptions.length === 0 ? 'no_subscriptions' : 'none_current';
}

// ---------- next payment ----------

/**
 * Invoice statuses that still expect money: the billing platform's `posted` (awaiting its due date),
 * `payment_due` (being retried) and `not_paid` (retries exhausted), and the payment platform's `open`.
 */
export const OPEN_INVOICE_STATUSES: ReadonlySet<string> = new Set(['posted', 'payment_due', 'not_paid', 'open']);

export function isOpenInvoice(invoice: NormalisedInvoice): boolean {
  return OPEN_INVOICE_STATUSES.has(invoice.status) && (invoice.amountDue === undefined || invoice.amountDue > 0);
}

export type NextPayment = {
  at: string;
  amount?: number;
  currency?: string;
  source:
    | { kind: 'subscription'; connector: PlaybookConnector; id: string; field: 'nextBillingAt' }
    | { kind: 'invoice'; connector: PlaybookConnector; id: string; field: 'nextPaymentAttemptAt' | 'dueAt' };
};

/** Why no next payment date can be given. */
export type NoNextPaymentReason = 'no_current_subscription' | 'cancelling' | 'no_date_known';

/** The next payment and the record it was read from (for the answer's freshness), or why there is none. */
export type NextPaymentDecision =
  | { nextPayment: NextPayment; from: Subscription | Invoice }
  | { nextPayment: null; reason: NoNextPaymentReason };

/**
 * When the customer pays next: the earliest `nextBillingAt` of the running subscriptions that
 * renew; failing that, the earliest date an open invoice will be charged (its next payment attempt
 * when the platform will retry, else its due date).
 */
export function nextPayment(subscriptions: readonly Subscription[], invoices: readonly Invoice[]): NextPaymentDecision {
  const running = subscriptions.filter((subscription) => isCurrent(subscription.body));
  const renewing = running.filter((subscription) => !isCancelling(subscription.body));

  const fromSubscription = earliest(
    renewing.flatMap((subscription) => (subscription.body.nextBillingAt ? [{ at: subscription.body.nextBillingAt, item: subscription }] : [])),
  );
  if (fromSubscription) {
    const { body, connector } = fromSubscription.item;
    return {
      nextPayment: {
        at: fromSubscription.at,
        ...(body.amount !== undefined ? { amount: body.amount } : {}),
        ...(body.currency !== undefined ? { currency: body.currency } : {}),
        source: { kind: 'subscription', connector, id: body.id, field: 'nextBillingAt' },
      },
      from: fromSubscription.item,
    };
  }

  const fromInvoice = earliest(
    invoices
      .filter((invoice) => isOpenInvoice(invoice.body))
      .flatMap((invoice) => {
        const field: 'nextPaymentAttemptAt' | 'dueAt' | undefined = invoice.body.nextPaymentAttemptAt
          ? 'nextPaymentAttemptAt'
          : invoice.body.dueAt
            ? 'dueAt'
            : undefined;
        return field ? [{ at: invoice.body[field]!, item: invoice, field }] : [];
      }),
  );
  if (fromInvoice) {
    const { body, connector } = fromInvoice.item;
    const amount = body.amountDue ?? body.total;
    return {
      nextPayment: {
        at: fromInvoice.at,
        ...(amount !== undefined ? { amount } : {}),
        ...(body.currency !== undefined ? { currency: body.currency } : {}),
        source: { kind: 'invoice', connector, id: body.id, field: fromInvoice.field },
      },
      from: fromInvoice.item,
    };
  }

  if (running.length === 0) return { nextPayment: null, reason: 'no_current_subscription' };
  if (renewing.length === 0) return { nextPayment: null, reason: 'cancelling' };
  return { nextPayment: null, reason: 'no_date_known' };
}

function earliest<T extends { at: string }>(candidates: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const candidate of candidates) {
    const time = timeOf(candidate.at);
    if (time === undefined) continue;
    if (best === undefined || time < timeOf(best.at)!) best = candidate;
  }
  return best;
}

// ---------- tier ----------

export type Tier = {
  connector: PlaybookConnector;
  subscriptionId: string;
  state: SubscriptionState;
  planId?: string;
  planName?: string;
  amount?: number;
  currency?: string;
};

/** The plan and recurring amount of the current subscription: what a qualification agent ranks by. */
export function tierOf(subscriptions: readonly Subscription[]): Tier | null {
  const current = currentSubscription(subscriptions);
  if (!current) return null;
  const { body } = current;
  return {
    connector: current.connector,
    subscriptionId: body.id,
    state: body.state,
    ...(body.planId !== undefined ? { planId: body.planId } : {}),
    ...(body.planName !== undefined ? { planName: body.planName } : {}),
    ...(body.amount !== undefined ? { amount: body.amount } : {}),
    ...(body.currency !== undefined ? { currency: body.currency } : {}),
  };
}
