import type { PollerNotice, PollerNotices, ReceivedNotice } from '../shared/workflows/poller-notices';

/**
 * The poller notice queue in process: what `tell` adds, one waiting `receive` takes (like an SQS
 * long-poll); a notice given back goes to the front for the next receiver.
 */
export class LocalPollerNotices implements PollerNotices {
  private readonly waiting: PollerNotice[] = [];
  private readonly receivers: Array<() => void> = [];
  /** Notices told so far (tests). */
  told = 0;

  async tell(notice: PollerNotice): Promise<void> {
    this.told++;
    this.waiting.push(notice);
    this.receivers.shift()?.();
  }

  get depth(): number {
    return this.waiting.length;
  }

  async receive(options: { max: number; waitMs: number; signal: AbortSignal }): Promise<ReceivedNotice[]> {
    if (this.waiting.length === 0 && !options.signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          options.signal.removeEventListener('abort', done);
          const index = this.receivers.indexOf(done);
          if (index >= 0) this.receivers.splice(index, 1);
          resolve();
        };
        const timer = setTimeout(done, options.waitMs);
        options.signal.addEventListener('abort', done, { once: true });
        this.receivers.push(done);
      });
    }
    if (options.signal.aborted) return [];
    return this.waiting.splice(0, options.max).map((notice) => ({
      notice,
      done: async () => undefined,
      giveBack: async () => {
        this.waiting.unshift(notice);
        this.receivers.shift()?.();
      },
    }));
  }
}
