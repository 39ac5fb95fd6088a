import * as z from 'zod';

/**
 * Faults a simulator can inject, so tests and `npm start` users can watch the gateway survive
 * what real platforms do: rate limits, outages, hung and dropped connections, slow answers,
 * expired tokens and broken bodies.
 */
export const Fault = z.discriminatedUnion('kind', [
  /** An error status in the platform's own error shape; 429 with or without Retry-After. */
  z.object({ kind: z.literal('status'), status: z.number().int().min(400).max(599), retryAfterSeconds: z.number().min(0).optional() }),
  /** The request is accepted and never answered: the client's timeout must fire. */
  z.object({ kind: z.literal('timeout') }),
  /** The socket is destroyed before any answer. */
  z.object({ kind: z.literal('drop') }),
  /** The normal answer, late. */
  z.object({ kind: z.literal('slow'), delayMs: z.number().int().min(0).max(120_000) }),
  /** 401 as the platform answers an expired or revoked token. */
  z.object({ kind: z.literal('expired-token') }),
  /** 200 with an HTML page (a proxy or login page in front of the API). */
  z.object({ kind: z.literal('html') }),
  /** 200 with JSON cut off half way. */
  z.object({ kind: z.literal('truncated') }),
]);
export type Fault = z.infer<typeof Fault>;

export const FaultRule = z.object({
  fault: Fault,
  /** How many matching requests get the fault; then the rule is spent. */
  times: z.number().int().min(1).default(1),
  /** Only requests whose path starts with this. */
  pathPrefix: z.string().optional(),
  method: z.string().optional(),
});
export type FaultRule = z.input<typeof FaultRule>;

export const RandomFaults = z.object({
  /** Fraction of requests (0..1) that get one of `faults`, chosen at random. */
  rate: z.number().min(0).max(1),
  faults: z.array(Fault).min(1),
  seed: z.number().int().optional(),
});
export type RandomFaults = z.input<typeof RandomFaults>;

/** A small seeded generator (mulberry32) so a faulty run can be repeated exactly. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Decides, request by request, which fault (if any) a simulator serves. */
export class FaultPlan {
  private rules: Array<z.infer<typeof FaultRule> & { remaining: number }> = [];
  private random: { rate: number; faults: Fault[]; next: () => number } | undefined;
  /** How many faults were served, by kind (tests and benchmarks read it). */
  readonly served = new Map<string, number>();

  inject(rule: FaultRule): void {
    const parsed = FaultRule.parse(rule);
    this.rules.push({ ...parsed, remaining: parsed.times });
  }

  setRandom(random: RandomFaults | undefined): void {
    if (!random) {
      this.random = undefined;
      return;
    }
    const parsed = RandomFaults.parse(random);
    this.random = { rate: parsed.rate, faults: parsed.faults, next: seededRandom(parsed.seed ?? 1) };
  }

  clear(): void {
    this.rules = [];
    this.random = undefined;
  }

  next(method: string, path: string): Fault | undefined {
    const rule = this.rules.find(
      (r) => r.remaining > 0 && (!r.pathPrefix || path.startsWith(r.pathPrefix)) && (!r.method || r.method === method),
    );
    let fault: Fault | undefined;
    if (rule) {
      rule.remaining -= 1;
      if (rule.remaining === 0) this.rules = this.rules.filter((r) => r !== rule);
      fault = rule.fault;
    } else if (this.random && this.random.next() < this.random.rate) {
      const index = Math.floor(this.random.next() * this.random.faults.length);
      fault = this.random.faults[index];
    }
    if (fault) this.served.set(fault.kind, (this.served.get(fault.kind) ?? 0) + 1);
    return fault;
  }
}
