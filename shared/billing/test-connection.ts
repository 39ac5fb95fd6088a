import type { PlatformClient } from '../http/platform-client';
import { BillingListEnvelope } from './objects';

/**
 * Test Connection for the billing connector: one cheap authenticated read, the first customer.
 * It proves the site exists (404 otherwise), the key is valid (401) and may read data (403 for a
 * publishable key). A failure is the client's PlatformError, thrown as is: `billingProblem` turns
 * it into the spec's remedy and the connection's health.
 */
export async function testBillingConnection(client: PlatformClient): Promise<void> {
  // The schema makes an HTML page or a truncated body (a proxy, a login page) a failure, not a pass.
  await client.request({ method: 'GET', path: '/api/v2/customers', query: { limit: 1 }, schema: BillingListEnvelope });
}
