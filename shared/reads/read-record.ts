import * as z from 'zod/mini';
import { connectors } from '../connections/registry';
import type { SyncedRecord } from '../store/items';

/**
 * The connectors whose synced records playbooks read: every connector that syncs records (their
 * records share the normalised shapes of shared/sync/normalised.ts), from the registry.
 */
export const PLAYBOOK_CONNECTORS = Object.keys(connectors.syncing()) as [string, ...string[]];
export type PlaybookConnector = string;

/**
 * A synced record's normalised body with where it came from: what the read decisions work on.
 * `syncedAt` travels along so every answer can say how fresh it is.
 */
export interface ReadRecord<T> {
  connector: PlaybookConnector;
  object: string;
  body: T;
  syncedAt?: string;
}

/**
 * Stored bodies checked against their normalised shape. A body that does not fit (written by an
 * older gateway, say) is left out rather than failing the whole read; its id is reported so the
 * caller can log it.
 */
export function readBodies<T>(records: readonly SyncedRecord[], shape: z.core.$ZodType<T>): { read: ReadRecord<T>[]; unreadableIds: string[] } {
  const read: ReadRecord<T>[] = [];
  const unreadableIds: string[] = [];
  for (const record of records) {
    const parsed = z.safeParse(shape, record.body);
    if (!parsed.success || !isPlaybookConnector(record.connector)) {
      unreadableIds.push(record.id);
      continue;
    }
    read.push({
      connector: record.connector,
      object: record.object,
      body: parsed.data,
      ...(record.syncedAt ? { syncedAt: record.syncedAt } : {}),
    });
  }
  return { read, unreadableIds };
}

export function isPlaybookConnector(connector: string): connector is PlaybookConnector {
  return (PLAYBOOK_CONNECTORS as readonly string[]).includes(connector);
}

/** Milliseconds of an ISO time, or undefined. Compared as numbers: ISO strings with and without fractions do not sort as text. */
export function timeOf(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Newest first by `when`; items without a time go last; ties by id, so the order is stable
 * across calls.
 */
export function newestFirst<T extends { body: { id: string } }>(items: readonly T[], when: (item: T) => string | undefined): T[] {
  return [...items].sort((a, b) => {
    const ta = timeOf(when(a));
    const tb = timeOf(when(b));
    if (ta !== tb) {
      if (ta === undefined) return 1;
      if (tb === undefined) return -1;
      return tb - ta;
    }
    return a.body.id < b.body.id ? -1 : a.body.id > b.body.id ? 1 : 0;
  });
}
