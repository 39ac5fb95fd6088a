import * as z from 'zod';

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
      email: z.string().optional(),
      name: z.string().optional(),
      createdAt: Time.optional(),
      updatedAt: Time.optional(),
    })
    .meta({ id: 'Customer' }),
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
    planId: z.string().optional(),
    planName: z.string().optional(),
    amount: z.number().int().optional(),
    currency: z.string().optional(),
    currentPeriodEnd: Time.optional(),
    /** When the next payment is due (billing `next_billing_at`; payment: the period end unless cancelling). */
    nextBillingAt: Time.optional(),
    cancelledAt: Time.optional(),
    createdAt: Time.optional(),
    updatedAt: Time.optional(),
  })
  .meta({ id: 'Subscription' });
export type NormalisedSubscription = z.infer<typeof NormalisedSubscription>;

export const NormalisedInvoice = z.lazy(() =>
  z
    .object({
      id: z.string(),
      customerId: z.string(),
      subscriptionId: z.string().optional(),
      status: z.string(),
      total: z.number().int().optional(),
      amountDue: z.number().int().optional(),
      amountPaid: z.number().int().optional(),
      currency: z.string().optional(),
      issuedAt: Time.optional(),
      dueAt: Time.optional(),
      nextPaymentAttemptAt: Time.optional(),
      updatedAt: Time.optional(),
    })
    .meta({ id: 'Invoice' }),
);
export type NormalisedInvoice = z.infer<typeof NormalisedInvoice>;

/** Billing transactions, payment-platform charges and payment intents. */
export const PaymentOutcome = z.enum(['succeeded', 'failed', 'pending', 'refunded', 'other']);
export type PaymentOutcome = z.infer<typeof PaymentOutcome>;
export const NormalisedPayment = z
  .object({
    id: z.string(),
    customerId: z.string(),
    invoiceId: z.string().optional(),
    subscriptionId: z.string().optional(),
    amount: z.number().int(),
    currency: z.string().optional(),
    outcome: PaymentOutcome,
    /** The platform's own status word, unchanged. */
    status: z.string(),
    failureMessage: z.string().optional(),
    at: Time.optional(),
    updatedAt: Time.optional(),
  })
  .meta({ id: 'Payment' });
export type NormalisedPayment = z.infer<typeof NormalisedPayment>;

/** Unix seconds (both platforms' wire format) → ISO 8601, or undefined. */
export function isoFromUnixSeconds(value: unknown): string | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? new Date(value * 1000).toISOString() : undefined;
}
