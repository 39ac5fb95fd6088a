import * as z from 'zod/mini';
import type { SyncCheckpoint } from '../store/items';
import { PLAYBOOK_CONNECTORS, timeOf, type PlaybookConnector } from './read-record';

const Time = z.iso.datetime({ offset: true });

export const Freshness = z
  .object({
    syncedAt: z
      .nullable(Time)
      .check(
        z.describe(
          'When the oldest record shown in this answer was last written by a sync or webhook (they write only changes, so an old time can mean "unchanged since"); null when no record is shown',
        ),
      ),
    lastSyncSucceededAt: z
      .object(Object.fromEntries(PLAYBOOK_CONNECTORS.map((connector) => [connector, z.optional(z.nullable(Time))])))
      .check(
        z.describe(
          'Per connector used: the oldest last successful sync among the data objects read; null when no successful sync vouches for them yet. Objects never synced through the API (webhooks only) have no say while another object has.',
        ),
      ),
  })
  .register(z.globalRegistry, { id: 'Freshness' });
export type Freshness = z.infer<typeof Freshness>;

/** What an answer used: the records' write times, and each connector's data objects read. */
export interface Used {
  syncedAt: readonly (string | undefined)[];
  objects: ReadonlyMap<PlaybookConnector, ReadonlySet<string>>;
}

/**
 * How fresh an answer is: the oldest `syncedAt` of the records shown, and per connector the
 * oldest `lastSucceededAt` of the objects consulted (an empty answer is as fresh as the sync of
 * what was searched). Conservative on purpose: a playbook that says "as of ..." must not
 * overstate it. An object with a checkpoint whose first sync has not succeeded makes it null.
 */
export function freshnessOf(used: Used, checkpoints: readonly SyncCheckpoint[]): Freshness {
  const lastSyncSucceededAt: Freshness['lastSyncSucceededAt'] = {};
  for (const connector of PLAYBOOK_CONNECTORS) {
    const objects = used.objects.get(connector);
    if (!objects || objects.size === 0) continue;
    const relevant = checkpoints.filter((checkpoint) => checkpoint.connector === connector && objects.has(checkpoint.object));
    if (relevant.length === 0) {
      lastSyncSucceededAt[connector] = null;
      continue;
    }
    lastSyncSucceededAt[connector] = relevant.some((checkpoint) => checkpoint.lastSucceededAt === undefined)
      ? null
      : oldest(relevant.map((checkpoint) => checkpoint.lastSucceededAt));
  }
  return { syncedAt: oldest(used.syncedAt), lastSyncSucceededAt };
}

function oldest(times: readonly (string | undefined)[]): string | null {
  let found: { iso: string; ms: number } | undefined;
  for (const iso of times) {
    const ms = timeOf(iso);
    if (iso === undefined || ms === undefined) continue;
    if (!found || ms < found.ms) found = { iso, ms };
  }
  return found?.iso ?? null;
}

/** Collects what an answer used, connector by connector. */
export class UsedData implements Used {
  readonly syncedAt: (string | undefined)[] = [];
  readonly objects = new Map<PlaybookConnector, Set<string>>();

  add(records: readonly { connector: PlaybookConnector; object: string; syncedAt?: string }[]): this {
    for (const record of records) {
      this.syncedAt.push(record.syncedAt);
      this.object(record.connector, record.object);
    }
    return this;
  }

  /** An object consulted even if it gave nothing (its sync state still says how fresh "nothing" is). */
  object(connector: PlaybookConnector, object: string): this {
    const objects = this.objects.get(connector) ?? new Set<string>();
    objects.add(object);
    this.objects.set(connector, objects);
    return this;
  }
}
