import type * as Store from '../../shared/store/store';
import type { Table } from '../../shared/store/table-access';

/**
 * Some of the store's functions replaced for one table, for a test that makes the store fail, stall
 * or count its calls under the code it runs (the poller's leases, a sync's seen-page reads). The
 * store is module functions, which a test cannot reassign, so the test file mocks the store module
 * with this seam, which sends each call to a replacement registered for its table, or else to the
 * store itself:
 *
 *   vi.mock('../../shared/store/store', async (original) => (await import('../support/store-seam')).storeSeam(await original()));
 *
 * and then gives the code under test `tableWith(gateway.table, { claimConversationLease: ... })`.
 * A replacement takes the call's arguments with the table beneath first, so
 * `(table, ...args) => store.claimConversationLease(table, ...args)` is the store itself (or the
 * replacements of the table it was made from).
 */
type StoreModule = typeof Store;
type StoreFunctionName = { [K in keyof StoreModule]: StoreModule[K] extends (table: Table, ...args: never[]) => unknown ? K : never }[keyof StoreModule];
export type StoreReplacements = { [K in StoreFunctionName]?: StoreModule[K] };

const replacements = new WeakMap<Table, { replaced: StoreReplacements; beneath: Table }>();

export function storeSeam(original: StoreModule): StoreModule {
  const seam: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(original)) {
    // The error classes pass through as they are: code under test checks `instanceof` them.
    const isFunction = typeof value === 'function' && !/^class\b/.test(Function.prototype.toString.call(value));
    seam[name] = isFunction
      ? (table: Table, ...args: unknown[]) => {
          const seamed = replacements.get(table);
          const replaced = seamed?.replaced[name as StoreFunctionName] as ((...args: unknown[]) => unknown) | undefined;
          return replaced ? replaced(seamed!.beneath, ...args) : (value as (...args: unknown[]) => unknown)(table, ...args);
        }
      : value;
  }
  return seam as StoreModule;
}

/** A table of its own, the same client and name, whose calls to the named functions go to the replacements. */
export function tableWith(table: Table, replaced: StoreReplacements): Table {
  const own = { ...table };
  replacements.set(own, { replaced, beneath: table });
  return own;
}

/** Replacements for the table itself, for every function that uses it; the answer takes them away. */
export function replaceOn(table: Table, replaced: StoreReplacements): () => void {
  replacements.set(table, { replaced, beneath: { ...table } });
  return () => void replacements.delete(table);
}
