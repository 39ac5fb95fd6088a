import * as z from 'zod/mini';
import type { PlatformClient } from '../http/platform-client';

/** Just enough to know the answer is the platform's list and not a proxy's page. */
const CustomerList = z.looseObject({ object: z.optional(z.literal('list')), data: z.array(z.unknown()), has_more: z.boolean() });

/**
 * Test Connection: one cheap authenticated read (`GET /v1/customers?limit=1`). Resolves when the
 * key can read customers; otherwise throws the client's PlatformError as it is, for
 * `paymentProblem` (errors.ts) to turn into the spec's remedy.
 */
export async function testPaymentConnection(client: PlatformClient): Promise<void> {
  await client.request({ method: 'GET', path: '/v1/customers', query: { limit: 1 }, schema: CustomerList });
}
