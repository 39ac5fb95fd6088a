import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allApiRoutes } from '../../shared/api/routes/index';

const routes = await allApiRoutes();

/**
 * The API's page (docs/api.md, linked from the README's docs map) and the data connector's page, whose
 * reads it points to, name every operation the gateway serves, so the tables cannot fall behind the code.
 */
describe('docs: the API tables', () => {
  const pages = ['../../docs/api.md', '../../docs/connectors/data.md'].map((page) => readFileSync(new URL(page, import.meta.url), 'utf8'));
  /** The first cell of every table row in those pages, e.g. "`GET /api/v1/accounts?limit=&cursor=`". */
  const operations = pages
    .join('\n')
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(' | ')[0]!);

  it.each(routes.map((route) => [`${route.method} ${route.path}`]))('lists %s', (operation) => {
    const [method, path] = operation.split(' ') as [string, string];
    const listed = operations.some((cell) => new RegExp(`\`${method} ${path.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')}(\\?|\\[|\`)`).test(cell));
    expect(listed, `${operation} is missing from the API tables in docs/`).toBe(true);
  });
});
