import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalScheduler, SCHEDULES, type Frequency } from '../../local/local-scheduler';

describe('local scheduler', () => {
  afterEach(() => vi.useRealTimers());

  it('fires the deployed schedules’ events ({frequency}) at their periods, and on demand', async () => {
    vi.useFakeTimers();
    const fired: Frequency[] = [];
    const scheduler = new LocalScheduler(async (event) => void fired.push(event.frequency));
    scheduler.start();
    await vi.advanceTimersByTimeAsync(SCHEDULES.daily);
    expect(fired.filter((f) => f === 'hourly')).toHaveLength(24);
    expect(fired.filter((f) => f === 'daily')).toHaveLength(1);
    expect(fired).not.toContain('weekly');
    await scheduler.fire('weekly');
    expect(fired.at(-1)).toBe('weekly');
    scheduler.stop();
    await vi.advanceTimersByTimeAsync(SCHEDULES.weekly);
    expect(fired.filter((f) => f === 'weekly')).toHaveLength(1);
  });
});
