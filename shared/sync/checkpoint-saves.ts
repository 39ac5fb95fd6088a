import type { SyncCounts } from '../store/items';
import type { PagingContext, PagingRun } from './paging-run';
import type { RunCursor } from './sync-decisions';
import * as store from '../store/store';

/**
 * Saving a paging run's place (shared/sync/page-slices.ts) as it goes: the checkpoint, and before
 * it the ids of the pages a full run saw (its deletion sweep reads them).
 *
 * Saves are coalesced (one in flight, at most one every `CHECKPOINT_EVERY_MS`): a connection at
 * 100 requests a second would otherwise write its checkpoint 100 times a second. A kill loses at
 * most that much progress, which the next run lists again (compared, not rewritten).
 */

/** At most one checkpoint save per this long while pages flow. */
export const CHECKPOINT_EVERY_MS = 500;

/**
 * Seen ids of pages written since the last save. A checkpoint never moves a slice past a page
 * before its ids are stored (they go first, in BatchWriteItems): a page whose ids were lost with a
 * kill is listed again. One write per save instead of one per page.
 */
export class SeenPages {
  private readonly unsaved = new Map<number, string[]>();

  constructor(private readonly context: Pick<PagingContext, 'table' | 'seenScope' | 'seenExpiresAt'>) {}

  /** The ids page `pageNumber` (`seenPageNumber`) kept, stored with the next save. */
  note(pageNumber: number, ids: string[]): void {
    this.unsaved.set(pageNumber, ids);
  }

  async save(): Promise<void> {
    if (this.unsaved.size === 0) return;
    const pages = [...this.unsaved].map(([page, ids]) => ({ page, ids }));
    this.unsaved.clear();
    await store.putSeenPages(this.context.table, this.context.seenScope, pages, this.context.seenExpiresAt());
  }
}

/** The run's checkpoint saves: one in flight, coalesced. */
export class CheckpointSaves {
  private saving: Promise<void> | undefined;
  private dirty = false;
  private lastSavedAt = 0;
  /** Set once every slice has stopped: a run that is complete needs no save (finishing writes the checkpoint). */
  private stopped: { complete: boolean } | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly context: PagingContext,
    private readonly run: PagingRun,
    private readonly seen: SeenPages,
    /** Where the run stands now (`PagingRun.cursor`). */
    private readonly cursor: () => RunCursor,
    private readonly counts: SyncCounts,
  ) {}

  /** The run moved: a save follows (now, or when the last one is far enough behind). */
  markDirty(): void {
    this.dirty = true;
    this.saving ??= this.saveLoop().finally(() => {
      this.saving = undefined;
    });
  }

  /** Every slice has stopped: a save waiting for its time goes now (none once the run is complete); resolves when none is in flight. */
  async stop(complete: boolean): Promise<void> {
    this.stopped = { complete };
    this.wake?.();
    while (this.saving) await this.saving;
  }

  private async saveLoop(): Promise<void> {
    const { context, run } = this;
    while (this.dirty && !run.failure) {
      const wait = this.lastSavedAt + (context.checkpointEveryMs ?? CHECKPOINT_EVERY_MS) - performance.now();
      if (wait > 0 && !this.stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
      if (run.failure || this.stopped?.complete) return;
      this.dirty = false;
      const saved = this.cursor();
      try {
        await this.seen.save();
        await context.save(saved, { ...this.counts });
      } catch (error) {
        run.failure ??= { error };
        return;
      }
      this.lastSavedAt = performance.now();
      const held = context.afterSave?.(saved.pageIndex);
      if (held) {
        run.hold = Promise.resolve(held);
        await run.hold;
      }
    }
  }
}
