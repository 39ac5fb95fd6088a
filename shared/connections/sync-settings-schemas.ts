import type * as z from 'zod';
import { BillingSyncSettings } from '../billing/settings';
import { DataSyncSettings } from '../data/settings';
import type { ConnectorName } from '../connectors';
import { PaymentSyncSettings } from '../payment/settings';
import type { CommonSyncSettings } from './connector-platform';

/**
 * Each connector's sync settings schema, without its client: what the sync dispatcher needs to
 * turn settings into jobs (so its bundle stays free of the connectors' clients).
 */
export const syncSettingsSchemas: Partial<Record<ConnectorName, z.ZodType<CommonSyncSettings, unknown>>> = {
  billing: BillingSyncSettings,
  payment: PaymentSyncSettings,
};

/** Every connector's settings schema, scheduled or not: what Save settings validates against. */
export const settingsSchemas: Partial<Record<ConnectorName, z.ZodType<object, unknown>>> = {
  billing: BillingSyncSettings,
  payment: PaymentSyncSettings,
  data: DataSyncSettings,
};
