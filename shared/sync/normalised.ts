import * as z from 'zod/mini';

/**
 * The gateway's own shapes for synced records, the same for the billing and the payment platform,
 * so playbook reads and events need not know which platform a record came from. Amounts are in
 * the currency's minor unit (cents); times are ISO 8601 UTC. Each connector's objects.ts maps its
 * platform's records onto these; the hash that decides "changed or not" covers only these fields.
 */
const Time = z.iso.datetime();

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const NormalisedCustomer = z.lazy(() =>
  z
    .object({
      id: z.string(),
      email: z.optional(z.string()),
      name: z.optional(z.string()),
      createdAt: z.optional(Time),
      updatedAt: z.optional(Time),
    })
    .register(z.globalRegistry, { id: 'Customer' }),
);
export type NormalisedCustomer = z.infer<typeof NormalisedCustomer>;

/** Subscription states in one vocabulary: both platforms' statuses map onto these. */
export const SubscriptionState = z.enum(['future', 'trialing', 'active', 'non_renewing', 'past_due', 'unpaid', 'paused', 'incomplete', 'cancelled', 'other']);
export type SubscriptionState = z.infer<typeof SubscriptionState>;

export const NormalisedSubscription = z
  .object({
    id: z.string(),
    customerId: z.string(),
    state: SubscriptionState,
    /** The platform's own status word, unchanged. */
    status: z.string(),
    planId: z.optional(z.string()),
    planName: z.optional(z.string()),
    amount: z.optional(z.number().check(z.int())),
    currency: z.optional(z.string()),
    currentPeriodEnd: z.optional(Time),
    /** When the next payment is due (billing `next_billing_at`; payment: the period end unless cancelling). */
    nextBillingAt: z.optional(Time),
    cancelledAt: z.optional(Time),
    createdAt: z.optional(Time),
    updatedAt: z.optional(Time),
  })
  .register(z.globalRegistry, { id: 'Subscription' });
export type NormalisedSubscription = z.infer<typeof NormalisedSubscription>;

export const NormalisedInvoice = z.lazy(() =>
  z
    .object({
      id: z.string(),
      customerId: z.string(),
      subscriptionId: z.optional(z.string()),
      status: z.string(),
      total: z.optional(z.number().check(z.int())),
      amountDue: z.optional(z.number().check(z.int())),
      amountPaid: z.optional(z.number().check(z.int())),
      currency: z.optional(z.string()),
      issuedAt: z.optional(Time),
      dueAt: z.optional(Time),
      nextPaymentAttemptAt: z.optional(Time),
      updatedAt: z.optional(Time),
    })
    .register(z.globalRegistry, { id: 'Invoice' }),
);
export type NormalisedInvoice = z.infer<typeof NormalisedInvoice>;

/** Billing transactions, payment-platform charges and payment intents. */
export const PaymentOutcome = z.enum(['succeeded', 'failed', 'pending', 'refunded', 'other']);
export type PaymentOutcome = z.infer<typeof PaymentOutcome>;
export const NormalisedPayment = z
  .object({
    id: z.string(),
    customerId: z.string(),
    invoiceId: z.optional(z.string()),
    subscriptionId: z.optional(z.string()),
    amount: z.number().check(z.int()),
    currency: z.optional(z.string()),
    outcome: PaymentOutcome,
    /** The platform's own status word, unchanged. */
    status: z.string(),
    failureMessage: z.optional(z.string()),
    at: z.optional(Time),
    updatedAt: z.optional(Time),
  })
  .register(z.globalRegistry, { id: 'Payment' });
export type NormalisedPayment = z.infer<typeof NormalisedPayment>;

/** The last second `toISOString` writes with a four-digit year (9999-12-31T23:59:59Z). */
const LAST_FOUR_DIGIT_YEAR_SECOND = 253_402_300_799;

/**
 * Unix seconds (both platforms' wire format) → ISO 8601, or undefined. The same string as
 * `new Date(value * 1000).toISOString()`, which stays the way for fractions and far years; a whole
 * second is written by arithmetic, a quarter of the time (a synced record has up to six of them).
 */
export function isoFromUnixSeconds(value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return undefined;
  if (!Number.isInteger(value) || value > LAST_FOUR_DIGIT_YEAR_SECOND) return new Date(value * 1000).toISOString();
  return isoOfWholeSecond(value);
}

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/** A whole second from 1970 to 9999 as `YYYY-MM-DDTHH:MM:SS.000Z` (civil date from days: H. Hinnant's algorithm). */
function isoOfWholeSecond(seconds: number): string {
  const days = Math.floor(seconds / 86_400);
  const inDay = seconds - days * 86_400;
  const shifted = days + 719_468; // days since 0000-03-01
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(inDay / 3_600);
  const minute = Math.floor((inDay - hour * 3_600) / 60);
  const second = inDay - hour * 3_600 - minute * 60;
  return `${String(year).padStart(4, '0')}-${twoDigits(month)}-${twoDigits(day)}T${twoDigits(hour)}:${twoDigits(minute)}:${twoDigits(second)}.000Z`;
}
