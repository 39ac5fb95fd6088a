import { billingRowKey, readBillingRecord } from '../billing/objects';
import type { BillingObject } from '../billing/settings';
import type { PlatformClient } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import { readPaymentRecord } from '../payment/objects';
import type { PaymentObject } from '../payment/settings';
import type { NormalisedRecord } from '../sync/sync-source';

/** One record read from the platform now: found (normalised), or gone. */
export type FetchedRecord = { found: true; record: NormalisedRecord } | { found: false };

/** Reads one record by id, for events about a record not stored yet or carried unreadably. */
export type RecordFetcher = (object: string, id: string) => Promise<FetchedRecord>;

const BILLING_PATHS: Record<BillingObject, string> = {
  customers: '/api/v2/customers',
  subscriptions: '/api/v2/subscriptions',
  invoices: '/api/v2/invoices',
  // The platform has no payments resource: payments are transactions.
  payments: '/api/v2/transactions',
};

/**
 * `GET /v1/<object>/<id>`. A deleted customer answers `{id, deleted: true}`; a missing record 404.
 * The platform's records carry no version: the copy is as of `versionNow` (the fetch time, in
 * seconds like event times), so any event created before the fetch is older than it.
 */
export function paymentRecordFetcher(client: PlatformClient, versionNow: () => number): RecordFetcher {
  return async (object, id) => {
    const path = `/v1/${object}/${encodeURIComponent(id)}`;
    const version = versionNow();
    const body = await getOrGone(client, path);
    if (body === undefined || (body as { deleted?: unknown }).deleted === true) return { found: false };
    const reading = readPaymentRecord(object as PaymentObject, body, version);
    if (!reading.ok) throw unreadable('payment', path, reading.problem);
    return { found: true, record: reading.record };
  };
}

/** `GET /api/v2/<resource>/<id>` answers a row (`{customer: {...}}`); its `resource_version` is the version. */
export function billingRecordFetcher(client: PlatformClient): RecordFetcher {
  return async (object, id) => {
    const path = `${BILLING_PATHS[object as BillingObject]}/${encodeURIComponent(id)}`;
    const row = (await getOrGone(client, path)) as Record<string, unknown> | undefined;
    const raw = row?.[billingRowKey(object as BillingObject)] as { deleted?: unknown } | undefined;
    if (!raw || raw.deleted === true) return { found: false };
    const reading = readBillingRecord(object as BillingObject, raw);
    if (!reading.ok) throw unreadable('billing', path, reading.problem);
    return { found: true, record: reading.record };
  };
}

/** The body, or undefined for a 404 (the record is gone). Every other failure propagates: the event is retried. */
async function getOrGone(client: PlatformClient, path: string): Promise<unknown> {
  try {
    return (await client.request({ method: 'GET', path })).body;
  } catch (error) {
    if (error instanceof PlatformError && error.kind === 'not_found') return undefined;
    throw error;
  }
}

function unreadable(platform: 'payment' | 'billing', path: string, problem: string): PlatformError {
  return new PlatformError({ platform, kind: 'invalid_response', status: 200, attempts: 1, method: 'GET', path, retryable: false, reason: `the record does not have the expected shape (${problem})` });
}
