/** The few statistics the benchmarks report, in one place so every figure is computed the same way. */

/** The p-th percentile (nearest rank, rounding down) of the values; 0 when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The middle value (the upper one of an even count). */
export const median = (values: readonly number[]): number => percentile(values, 50);

/** Rounded to `digits` decimals, as figures are written. */
export const round = (value: number, digits = 2): number => Math.round(value * 10 ** digits) / 10 ** digits;

/** The least-squares slope of y over x (how much y grows per unit of x); 0 with fewer than two distinct x. */
export function slope(points: ReadonlyArray<{ x: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((sum, p) => sum + p.x, 0) / n;
  const my = points.reduce((sum, p) => sum + p.y, 0) / n;
  const sxx = points.reduce((sum, p) => sum + (p.x - mx) ** 2, 0);
  return sxx === 0 ? 0 : points.reduce((sum, p) => sum + (p.x - mx) * (p.y - my), 0) / sxx;
}
