import * as z from 'zod/mini';
import { connectors } from '../../connections/registry';
import { AccountId, ConnectorName } from '../../connectors';

/** A connector the registry offers (checked when the request arrives, so every registered connector is one). */
export const KnownConnector = ConnectorName.check(
  z.refine((name) => connectors.has(name), { message: 'not a connector this gateway offers' }),
  z.describe("A connector's name (GET /api/v1/connectors lists them)"),
);
export const ConnectionParams = z.object({ accountId: AccountId, connector: KnownConnector });
