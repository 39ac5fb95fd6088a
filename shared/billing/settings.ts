import * as z from 'zod';
import { formField } from '../connections/form-fields';
import { SyncFrequency, SyncMethod, dataObjectList } from '../sync/sync-settings';

export const BILLING_OBJECTS = ['customers', 'subscriptions', 'invoices', 'payments'] as const;
export type BillingObject = (typeof BILLING_OBJECTS)[number];

/** Billing sync settings, as the spec lists them. */
export const BillingSyncSettings = z
  .strictObject({
    dataObjects: dataObjectList(BILLING_OBJECTS)
      .default([...BILLING_OBJECTS])
      .meta(formField.choice('Data objects', { customers: 'Customers', subscriptions: 'Subscriptions', invoices: 'Invoices', payments: 'Payments' })),
    frequency: SyncFrequency.default('daily'),
    method: SyncMethod.default('api'),
    /** Which subscriptions are kept: Active, Cancelled or All. */
    subscriptionStatus: z
      .enum(['active', 'cancelled', 'all'])
      .default('all')
      .meta(formField.choice('Subscription status filter', { active: 'Active', cancelled: 'Cancelled', all: 'All' })),
  })
  .meta({ id: 'BillingSyncSettings' });
export type BillingSyncSettings = z.infer<typeof BillingSyncSettings>;
