import type { Route } from './route';

/**
 * A group of API routes built on its first request: the router knows its path templates without
 * loading it, so a cold start builds only the schemas of the area the first request reaches
 * (docs/cold-starts.md). test/api/route-areas.test.ts checks each area's paths against its routes.
 */
export interface RouteArea {
  /** Every path template of the area's routes. */
  paths: readonly string[];
  load(): Promise<readonly Route[]>;
}

/** An area of routes already built (the document's own route, a connector added at run time). */
export function routeArea(routes: readonly Route[]): RouteArea {
  return { paths: [...new Set(routes.map((route) => route.path))], load: async () => routes };
}

/** Every route of the areas, in their order: what the OpenAPI document and the tests read. */
export async function routesOf(areas: readonly RouteArea[]): Promise<Route[]> {
  return (await Promise.all(areas.map((area) => area.load()))).flat();
}
