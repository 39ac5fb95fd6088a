import type { PlatformClient } from '../http/platform-client';
import { PlatformError } from '../http/platform-error';
import type { NormalisedRecord } from '../sync/sync-source';

/** One record read from the platform now: found (normalised), or gone. */
export type FetchedRecord = { found: true; record: NormalisedRecord } | { found: false };

/** Reads one record by id, for events about a record not stored yet or carried unreadably. */
export type RecordFetcher = (object: string, id: string) => Promise<FetchedRecord>;

/** The body, or undefined for a 404 (the record is gone). Every other failure propagates: the event is retried. */
export async function getOrGone(client: PlatformClient, path: string): Promise<unknown> {
  try {
    return (await client.request({ method: 'GET', path })).body;
  } catch (error) {
    if (error instanceof PlatformError && error.kind === 'not_found') return undefined;
    throw error;
  }
}

/** A fetched record that does not have the shape the connector reads: not retried (it would read the same). */
export function unreadableRecord(platform: string, path: string, problem: string): PlatformError {
  return new PlatformError({ platform, kind: 'invalid_response', status: 200, attempts: 1, method: 'GET', path, retryable: false, reason: `the record does not have the expected shape (${problem})` });
}
