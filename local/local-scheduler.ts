import { SYNC_RETRY } from '../shared/sync/sync-retry';

/** Frequencies and their periods, as the deployed EventBridge Scheduler schedules fire them; `retries` is the retry schedule. */
export const SCHEDULES = {
  hourly: 60 * 60 * 1000,
  daily: 24 * 60 * 60 * 1000,
  weekly: 7 * 24 * 60 * 60 * 1000,
  retries: SYNC_RETRY.scheduleEveryMs,
} as const;
export type Frequency = keyof typeof SCHEDULES;

/** What the deployed schedules send the sync dispatcher (lib/sync.ts). */
export type ScheduleEvent = { frequency: Exclude<Frequency, 'retries'> } | { retries: true };

/**
 * Fires the same events as the deployed schedules (`{frequency}`, and `{retries: true}` for the
 * retry schedule), at the same periods. `fire` runs one now (the local server exposes it so a sync
 * need not wait an hour).
 */
export class LocalScheduler {
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly target: (event: ScheduleEvent) => Promise<unknown>) {}

  start(): void {
    for (const [frequency, period] of Object.entries(SCHEDULES) as Array<[Frequency, number]>) {
      const timer = setInterval(() => void this.fire(frequency).catch(() => undefined), period);
      timer.unref();
      this.timers.push(timer);
    }
  }

  fire(frequency: Frequency): Promise<unknown> {
    return this.target(frequency === 'retries' ? { retries: true } : { frequency });
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers.length = 0;
  }
}
