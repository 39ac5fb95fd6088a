import * as z from 'zod/mini';
import { formField } from '../connections/form-fields';
import { SyncFrequency, SyncMethod, dataObjectList } from '../sync/sync-settings';

export const BILLING_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payments'] as const;
export type BillingObject = (typeof BILLING_OBJECTS)[number];

/** Billing sync settings, as the spec lists them. */
export const BillingSyncSettings = z
  .strictObject({
    dataObjects: z
      ._default(dataObjectList(BILLING_OBJECTS), [...BILLING_OBJECTS])
      .check(z.meta(formField.choice('Data objects', { customers: 'Customers', subscriptions: 'Subscriptions', invoices: 'Invoices', payments: 'Payments' }))),
    frequency: z._default(SyncFrequency, 'daily'),
    method: z._default(SyncMethod, 'api'),
    /** Which subscriptions are kept: Active, Cancelled or All. */
    subscriptionStatus: z
      ._default(z.enum(['active', 'cancelled', 'all']), 'all')
      .check(z.meta(formField.choice('Subscription status filter', { active: 'Active', cancelled: 'Cancelled', all: 'All' }))),
  })
  .register(z.globalRegistry, { id: 'BillingSyncSettings' });
export type BillingSyncSettings = z.infer<typeof BillingSyncSettings>;
