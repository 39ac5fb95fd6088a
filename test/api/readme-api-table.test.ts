import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { apiRoutes } from '../../shared/api/routes/index';

/** The README's API section names every operation the gateway serves, so the table cannot fall behind the code. */
describe('README: the API tables', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## The API\n'), readme.indexOf('\n## ', readme.indexOf('\n## The API\n') + 1));
  /** The first cell of every table row in the section, e.g. "`GET /api/v1/accounts?limit=&cursor=`". */
  const operations = section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(' | ')[0]!);

  it.each(apiRoutes().map((route) => [`${route.method} ${route.path}`]))('lists %s', (operation) => {
    const [method, path] = operation.split(' ') as [string, string];
    const listed = operations.some((cell) => new RegExp(`\`${method} ${path.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')}(\\?|\\[|\`)`).test(cell));
    expect(listed, `${operation} is missing from the README's API tables`).toBe(true);
  });
});
