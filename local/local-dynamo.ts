import { spawn } from 'node:child_process';
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
export async function startLocalDynamo(options: { tableName?: string; path?: string; childProcess?: boolean } = {}): Promise<LocalDynamo> {
  const tableName = options.tableName ?? 'integration-gateway';
  if (options.childProcess) return startInChildProcess(tableName);
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(options.path ? { path: options.path } : {}) });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return connect(port, tableName, () => new Promise<void>((resolve, reject) => server.close((error?: Error | null) => (error ? reject(error) : resolve()))));
}

/**
 * dynalite in its own process: benchmarks use it so the database does not share the gateway's CPU
 * (in AWS it runs elsewhere too). In memory only.
 */
async function startInChildProcess(tableName: string): Promise<LocalDynamo> {
  const script = "const s=require('dynalite')({createTableMs:0,deleteTableMs:0,updateTableMs:0});s.listen(0,'127.0.0.1',()=>process.stdout.write(s.address().port+'\\n'))";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (data: Buffer) => resolve(data.toString().trim()));
    child.once('exit', (code) => reject(new Error(`dynalite exited with ${code}`)));
  });
  return connect(Number(port), tableName, async () => void child.kill());
}

async function connect(port: number, tableName: string, stopServer: () => Promise<void>): Promise<LocalDynamo> {
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localDynamoClient(endpoint);
  await createTable(client, tableName);
  return {
    endpoint,
    client,
    tableName,
    async stop() {
      client.destroy();
      await stopServer();
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

/**
 * Counts the commands a client sends (by name, e.g. `PutItemCommand`), how many succeeded, and the
 * most that were in flight at once. For "costs no write" and "bounded concurrency" assertions.
 */
export function watchCommands(client: DynamoDBClient) {
  const sent = new Map<string, number>();
  const succeeded = new Map<string, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      bump(sent, name);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        const result = await next(args);
        bump(succeeded, name);
        return result;
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: `watchCommands-${Math.random()}` },
  );
  return {
    sent: (name: string) => sent.get(name) ?? 0,
    succeeded: (name: string) => succeeded.get(name) ?? 0,
    maxInFlight: () => maxInFlight,
    reset() {
      sent.clear();
      succeeded.clear();
      maxInFlight = 0;
    },
  };
}
