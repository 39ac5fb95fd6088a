import { defineConnector } from '../connections/connector';
import { dataClient } from './client';
import { dataConnectionForm } from './config';
import { dataProblem } from './errors';
import { dataRoutes } from './routes';
import { DataSyncSettings } from './settings';
import { testDataConnection } from './test-connection';

/**
 * The data connector: a customer data platform, reached through the CRM's identity service. It
 * syncs no records: playbooks query it (SQL) and send it engagement events (ingestion).
 */
export const data = defineConnector<DataSyncSettings>({
  name: 'data',
  platform: 'data platform',
  connection: dataConnectionForm,
  settings: DataSyncSettings,
  testConnection: (options) => testDataConnection(dataClient(options)),
  problem: dataProblem,
  routes: dataRoutes,
});
