import { connectors } from '../connections/registry';
import type { NormalisedInvoice, NormalisedPayment } from '../sync/normalised';
import { newestFirst, timeOf, type PlaybookConnector, type ReadRecord } from './read-record';

/** Payment history, failed payments and invoices, as playbooks read them. Pure. */

type Payment = ReadRecord<NormalisedPayment>;
type Invoice = ReadRecord<NormalisedInvoice>;

/**
 * Which synced object holds a connector's payments: the first of its `paymentObjects` that is
 * synced or present, else the first. Where one payment shows as two objects (a payment intent and
 * its charge), only one of them is read, so nothing counts twice.
 */
export function paymentObjectOf(connector: PlaybookConnector, objectsPresent: ReadonlySet<string>): string {
  const candidates = paymentObjectCandidates(connector);
  return candidates.find((object) => objectsPresent.has(object)) ?? candidates[0] ?? 'payments';
}

/** The payment objects a connector may hold, preferred first, before `paymentObjectOf` picks one. */
export function paymentObjectCandidates(connector: PlaybookConnector): readonly string[] {
  return connectors.syncing()[connector]?.sync.paymentObjects ?? [];
}

/** Newest first (by when the payment happened), at most `limit`. */
export function paymentHistory(payments: readonly Payment[], limit: number): Payment[] {
  return newestFirst(payments, (payment) => payment.body.at ?? payment.body.updatedAt).slice(0, limit);
}

/**
 * Payments that failed, optionally only those at or after `since`. A payment without a time
 * cannot be placed after `since`, so it is left out when `since` is given.
 */
export function isFailedPayment(payment: NormalisedPayment, since?: Date): boolean {
  if (payment.outcome !== 'failed') return false;
  if (since === undefined) return true;
  const at = timeOf(payment.at ?? payment.updatedAt);
  return at !== undefined && at >= since.getTime();
}

/** Newest first (by issue date), at most `limit`. */
export function invoicesNewestFirst(invoices: readonly Invoice[], limit: number): Invoice[] {
  return newestFirst(invoices, (invoice) => invoice.body.issuedAt ?? invoice.body.updatedAt).slice(0, limit);
}
