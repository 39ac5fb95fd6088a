import * as z from 'zod/mini';
import { formField } from '../connections/form-fields';
import { SyncFrequency, SyncMethod, dataObjectList } from '../sync/sync-settings';

export const PAYMENT_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payment_intents', 'charges'] as const;
export type PaymentObject = (typeof PAYMENT_OBJECTS)[number];

export const PAYMENT_SUBSCRIPTION_STATUSES = ['active', 'canceled', 'incomplete', 'incomplete_expired', 'past_due', 'paused', 'trialing', 'unpaid'] as const;

/** Payment sync settings, as the spec lists them. */
export const PaymentSyncSettings = z
  .strictObject({
    dataObjects: z._default(dataObjectList(PAYMENT_OBJECTS), [...PAYMENT_OBJECTS]).check(
      z.meta(
        formField.choice('Data objects', {
          customers: 'Customers',
          subscriptions: 'Subscriptions',
          invoices: 'Invoices',
          payment_intents: 'Payment Intents',
          charges: 'Charges',
        }),
      ),
    ),
    frequency: z._default(SyncFrequency, 'daily'),
    method: z._default(SyncMethod, 'api'),
    /**
     * All customers; only those with an active subscription; or those with a subscription in one
     * of `subscriptionStatuses` ("By status").
     */
    customerFilter: z
      ._default(z.enum(['all', 'active_subscriptions', 'by_status']), 'all')
      .check(z.meta(formField.choice('Customer filter', { all: 'All', active_subscriptions: 'Active subscriptions only', by_status: 'By status' }))),
    subscriptionStatuses: z.optional(z.array(z.enum(PAYMENT_SUBSCRIPTION_STATUSES)).check(z.minLength(1, 'Choose at least one subscription status.'))).check(
      z.meta({
        ...formField.choice('Subscription statuses', Object.fromEntries(PAYMENT_SUBSCRIPTION_STATUSES.map((status) => [status, status.replaceAll('_', ' ')]))),
        'x-show-when': { customerFilter: ['by_status'] },
      }),
    ),
  })
  .check(
    z.refine((s) => s.customerFilter !== 'by_status' || s.subscriptionStatuses !== undefined, {
      message: 'Customer filter "By status" needs subscriptionStatuses.',
      path: ['subscriptionStatuses'],
    }),
  )
  .register(z.globalRegistry, { id: 'PaymentSyncSettings' });
export type PaymentSyncSettings = z.infer<typeof PaymentSyncSettings>;
