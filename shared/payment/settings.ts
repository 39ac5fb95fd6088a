import * as z from 'zod';
import { SyncFrequency, SyncMethod, dataObjectList } from '../sync/sync-settings';

export const PAYMENT_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'] as const;
export type PaymentObject = (typeof PAYMENT_OBJECTS)[number];

export const PAYMENT_SUBSCRIPTION_STATUSES = ['active', 'canceled', 'incomplete', 'incomplete_expired', 'past_due', 'paused', 'trialing', 'unpaid'] as const;

/** Payment sync settings, as the spec lists them. */
export const PaymentSyncSettings = z
  .strictObject({
    dataObjects: dataObjectList(PAYMENT_OBJECTS).default([...PAYMENT_OBJECTS]),
    frequency: SyncFrequency.default('daily'),
    method: SyncMethod.default('api'),
    /**
     * All customers; only those with an active subscription; or those with a subscription in one
     * of `subscriptionStatuses` ("By status").
     */
    customerFilter: z.enum(['all', 'active_subscriptions', 'by_status']).default('all'),
    subscriptionStatuses: z.array(z.enum(PAYMENT_SUBSCRIPTION_STATUSES)).min(1).optional(),
  })
  .refine((s) => s.customerFilter !== 'by_status' || s.subscriptionStatuses !== undefined, {
    message: 'Customer filter "By status" needs subscriptionStatuses.',
    path: ['subscriptionStatuses'],
  })
  .meta({ id: 'PaymentSyncSettings' });
export type PaymentSyncSettings = z.infer<typeof PaymentSyncSettings>;
