import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { createTable } from '../shared/store/create-table';

export interface LocalDynamo {
  endpoint: string;
  client: DynamoDBClient;
  tableName: string;
  stop(): Promise<void>;
}

/**
 * A real DynamoDB-API server (dynalite) on a loopback port the OS picks, with the gateway's table.
 * `path` keeps the data on disk across restarts (`npm start`); without it the data is in memory (tests).
 */
export async function startLocalDynamo(options: { tableName?: string; path?: string } = {}): Promise<LocalDynamo> {
  const tableName = options.tableName ?? 'integration-gateway';
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(options.path ? { path: options.path } : {}) });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localDynamoClient(endpoint);
  await createTable(client, tableName);
  return {
    endpoint,
    client,
    tableName,
    async stop() {
      client.destroy();
      await new Promise<void>((resolve, reject) => server.close((error?: Error | null) => (error ? reject(error) : resolve())));
    },
  };
}

/** A client for a local DynamoDB-API server; dynalite ignores the credentials. */
export function localDynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
