/**
 * The simulators' clock. Runs with real time by default; tests freeze it (`setNow`) so several
 * records share one second and rate limits do not refill, then move it on (`advance`).
 */
export class SandboxClock {
  private frozenAt: number | undefined;
  private offsetMs = 0;

  /** Milliseconds since the epoch, as the simulated platform sees it. */
  now(): number {
    return this.frozenAt ?? Date.now() + this.offsetMs;
  }

  /** Unix seconds, the unit both platforms put in records. */
  nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  /** Stops the clock at `ms`. */
  setNow(ms: number): void {
    this.frozenAt = ms;
  }

  /** Moves the clock on, frozen or running. */
  advance(ms: number): void {
    if (this.frozenAt !== undefined) this.frozenAt += ms;
    else this.offsetMs += ms;
  }

  /** Lets time run again from the current reading. */
  resume(): void {
    if (this.frozenAt === undefined) return;
    this.offsetMs = this.frozenAt - Date.now();
    this.frozenAt = undefined;
  }
}
