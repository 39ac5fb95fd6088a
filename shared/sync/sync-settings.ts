import * as z from 'zod/mini';
import { formField } from '../connections/form-fields';

/** Shared by both connectors' sync settings (the spec's Sync settings tables). */
export const SyncFrequency = z
  .enum(['hourly', 'daily', 'weekly'])
  .check(
    z.describe('How often scheduled syncs run: Hourly, Daily or Weekly'),
    z.meta(formField.choice('Sync frequency', { hourly: 'Hourly', daily: 'Daily', weekly: 'Weekly' })),
  );
export type SyncFrequency = z.infer<typeof SyncFrequency>;

/** API Direct: scheduled syncs only. Webhooks: webhooks only. Both: webhooks at once, syncs reconcile. */
export const SyncMethod = z
  .enum(['api', 'webhooks', 'both'])
  .check(
    z.describe("API Direct: scheduled syncs only. Webhooks: the platform's events only. Both: events at once, syncs reconcile."),
    z.meta(formField.choice('Sync method', { api: 'API Direct', webhooks: 'Webhooks', both: 'Both' })),
  );
export type SyncMethod = z.infer<typeof SyncMethod>;

/** A list of data objects: at least one, each once. */
export function dataObjectList<const T extends readonly [string, ...string[]]>(objects: T) {
  return z.array(z.enum(objects)).check(
    z.minLength(1, 'Choose at least one data object.'),
    z.refine((list) => new Set(list).size === list.length, 'Each data object once.'),
  );
}
