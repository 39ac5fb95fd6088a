import { describe, expect, it } from 'vitest';
import { median, slope } from '../../bench/statistics';

describe('bench statistics', () => {
  it('the slope is what y grows per unit of x, whatever it started at', () => {
    expect(slope([{ x: 250, y: 1000 + 250 * 80 }, { x: 500, y: 1000 + 500 * 80 }, { x: 1000, y: 1000 + 1000 * 80 }])).toBeCloseTo(80);
    // Noise around a line: least squares, not the last pair.
    expect(slope([{ x: 250, y: 323.6 }, { x: 500, y: 343.1 }, { x: 750, y: 360 }, { x: 1000, y: 382.6 }])).toBeCloseTo(0.07756, 4);
    expect(slope([{ x: 1, y: 5 }])).toBe(0);
    expect(slope([{ x: 2, y: 5 }, { x: 2, y: 9 }])).toBe(0);
  });

  it('the median of an odd count is the middle one', () => {
    expect(median([3, 1, 2])).toBe(2);
  });
});
