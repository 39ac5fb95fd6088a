import { describe, expect, it } from 'vitest';
import { BillingSyncSettings } from '../../shared/billing/settings';
import { firstSyncJobs, jobsFor } from '../../shared/sync/dispatch-syncs';

const at = '2026-11-29T03:00:00.000Z';
const connection = (syncSettings: Record<string, unknown>) => ({ accountId: 'acme', connector: 'billing' as const, syncSettings });

describe('which sync jobs a connection asks for', () => {
  it('one job per selected data object; only the chosen ones when Sync now names some', () => {
    const selected = connection({ dataObjects: ['customers', 'invoices'], frequency: 'daily', method: 'api' });
    expect(jobsFor(selected, BillingSyncSettings, 'manual', at).map((job) => job.object)).toEqual(['customers', 'invoices']);
    expect(jobsFor(selected, BillingSyncSettings, 'manual', at, { objects: ['invoices', 'payments'], full: true })).toEqual([
      { accountId: 'acme', connector: 'billing', object: 'invoices', trigger: 'manual', requestedAt: at, full: true },
    ]);
  });

  it('the first sync: every selected object, `connected`, unless the method is Webhooks only or the settings are unreadable', () => {
    expect(firstSyncJobs(connection({ dataObjects: ['customers', 'payments'], frequency: 'daily', method: 'both' }), BillingSyncSettings, at)).toEqual([
      { accountId: 'acme', connector: 'billing', object: 'customers', trigger: 'connected', requestedAt: at },
      { accountId: 'acme', connector: 'billing', object: 'payments', trigger: 'connected', requestedAt: at },
    ]);
    // A new connection's defaults: every object, API Direct.
    expect(firstSyncJobs(connection({}), BillingSyncSettings, at).map((job) => job.object)).toEqual(['customers', 'subscriptions', 'invoices', 'payments']);
    expect(firstSyncJobs(connection({ dataObjects: ['customers'], frequency: 'daily', method: 'webhooks' }), BillingSyncSettings, at)).toEqual([]);
    expect(firstSyncJobs(connection({ dataObjects: ['faxes'] }), BillingSyncSettings, at)).toEqual([]);
  });
});
