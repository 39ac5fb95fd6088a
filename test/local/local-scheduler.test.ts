import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalScheduler, SCHEDULES, type Frequency } from '../../local/local-scheduler';
import { SYNC_RETRY } from '../../shared/sync/sync-retry';

describe('local scheduler', () => {
  afterEach(() => vi.useRealTimers());

  it('fires the deployed schedules’ events ({frequency}, {retries: true}) at their periods, and on demand', async () => {
    vi.useFakeTimers();
    const fired: Frequency[] = [];
    const scheduler = new LocalScheduler(async (event) => void fired.push('retries' in event ? 'retries' : event.frequency));
    scheduler.start();
    await vi.advanceTimersByTimeAsync(SCHEDULES.daily);
    expect(fired.filter((f) => f === 'hourly')).toHaveLength(24);
    expect(fired.filter((f) => f === 'retries')).toHaveLength(SCHEDULES.daily / SYNC_RETRY.scheduleEveryMs);
    expect(fired.filter((f) => f === 'daily')).toHaveLength(1);
    expect(fired).not.toContain('weekly');
    await scheduler.fire('weekly');
    expect(fired.at(-1)).toBe('weekly');
    scheduler.stop();
    await vi.advanceTimersByTimeAsync(SCHEDULES.weekly);
    expect(fired.filter((f) => f === 'weekly')).toHaveLength(1);
  });
});
