import * as z from 'zod/mini';
import type { DataPlatformSession } from './client';

/**
 * Test Connection for the data connector: the whole token flow (JWT bearer, then the a360
 * exchange) and one cheap query, which also proves the `cdp_query_api` scope. A failure is thrown
 * as is (PlatformError or DataSetupError): `dataProblem` turns it into the spec's remedy.
 */

export const DATA_QUERY_PATH = '/services/data/v61.0/ssot/queryv2';
export const TEST_CONNECTION_SQL = 'SELECT COUNT(*) FROM UnifiedIndividual__dlm';

const CountAnswer = z.looseObject({ data: z.array(z.array(z.unknown())) });

/** Returns how many unified individuals the tenant holds (shown to the user as a sign of life). */
export async function testDataConnection(session: DataPlatformSession): Promise<{ unifiedIndividuals: number }> {
  const answer = await session.request({
    method: 'POST',
    path: DATA_QUERY_PATH,
    body: { sql: TEST_CONNECTION_SQL },
    schema: CountAnswer,
    // A read: sending it twice is harmless.
    idempotent: true,
  });
  const count = Number(answer.body.data[0]?.[0] ?? 0);
  return { unifiedIndividuals: Number.isFinite(count) ? count : 0 };
}
