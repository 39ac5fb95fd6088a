import type { ConnectorName } from '../connectors';
import { dataClient } from '../data/client';
import { dataProblem } from '../data/errors';
import { testDataConnection } from '../data/test-connection';
import type { ConnectionCheck, ConnectorPlatform } from './connector-platform';
import { connectorPlatforms } from './platforms';

function checkOf(platform: ConnectorPlatform): ConnectionCheck {
  return { test: (options) => platform.testConnection(platform.client(options)), problem: (error) => platform.problem(error) };
}

/**
 * Test Connection, per connector: the syncing connectors through their platform side, the data
 * connector (no record sync: it queries and ingests) through its own session.
 */
export const connectionChecks: Partial<Record<ConnectorName, ConnectionCheck>> = {
  ...Object.fromEntries(Object.entries(connectorPlatforms).map(([name, platform]) => [name, checkOf(platform)])),
  data: { test: (options) => testDataConnection(dataClient(options)), problem: dataProblem },
};
