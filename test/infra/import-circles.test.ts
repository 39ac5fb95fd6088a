import { describe, expect, it } from 'vitest';
import { importCircles, importGraph } from '../support/import-graph';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * No two files of the product import each other, directly or round a circle (type-only imports
 * count): a circle makes both files one room to read, and leaves what loads first to chance.
 */
describe('the import graph of shared/, functions/ and lib/', () => {
  it('has no circles', () => {
    const graph = importGraph(ROOT, ['shared', 'functions', 'lib']);
    expect(graph.size).toBeGreaterThan(150);
    // Resolution works: the registry's imports are found (a graph without edges has no circles either).
    expect(graph.get('shared/connections/registry.ts')).toContain('shared/connections/connector-registry.ts');
    expect(importCircles(graph)).toEqual([]);
  }, 60_000);

  it('finds a circle when there is one, of two files or round several', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts', 'c.ts']],
      ['c.ts', ['d.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['c.ts']],
      ['f.ts', ['f.ts']],
      ['g.ts', ['a.ts']],
    ]);
    expect(importCircles(graph)).toEqual(expect.arrayContaining([['a.ts', 'b.ts'], ['c.ts', 'd.ts', 'e.ts'], ['f.ts']]));
    expect(importCircles(graph)).toHaveLength(3);
  });
});
