import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { withoutCallLog } from '../shared/aws/sdk-call-log';
import { createTable } from '../shared/store/create-table';
import { STORE_MAX_ATTEMPTS } from '../shared/store/table';
import { itemWriteUnits } from './table-throughput';

/** How long the server keeps an idle client socket open. */
const KEEP_ALIVE_MS = 65_000;

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
  // Node closes a kept-alive socket idle 5 s; a client reusing it that moment gets ECONNRESET (several
  // sync jobs side by side left some of the client's 50 sockets idle that long). DynamoDB keeps them longer.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  // Stopping drops every connection: one a client left open (kept alive 65 s) would hold close() past a test hook's timeout.
  const stopServer = () =>
    new Promise<void>((resolve, reject) => {
      server.close((error?: Error | null) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
  return connect(port, tableName, stopServer);
}

/**
 * dynalite in its own process: benchmarks use it so the database does not share the gateway's CPU
 * (in AWS it runs elsewhere too). In memory only.
 */
async function startInChildProcess(tableName: string): Promise<LocalDynamo> {
  const script = "const s=require('dynalite')({createTableMs:0,deleteTableMs:0,updateTableMs:0});s.keepAliveTimeout=" + KEEP_ALIVE_MS + ";s.listen(0,'127.0.0.1',()=>process.stdout.write(s.address().port+'\\n'))";
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
  return withoutCallLog(
    new DynamoDBClient({
      region: 'us-east-1',
      endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: STORE_MAX_ATTEMPTS,
    }),
  );
}

/**
 * The keys a write command touches, read from its input (every item of a BatchWriteItem), and the
 * write units of each as DynamoDB sizes the item (a delete or an update's key alone: 1).
 */
function writtenKeys(name: string, input: Record<string, unknown>): Array<{ pk: string; sk: string; units: number }> {
  const keyOf = (item: unknown) => {
    const attributes = item as Record<string, { S?: string } | undefined> | undefined;
    return { pk: attributes?.pk?.S ?? '', sk: attributes?.sk?.S ?? '', units: itemWriteUnits(attributes) };
  };
  switch (name) {
    case 'PutItemCommand':
      return [keyOf(input.Item)];
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return [keyOf(input.Key)];
    case 'BatchWriteItemCommand': {
      const requests = Object.values((input.RequestItems ?? {}) as Record<string, Array<{ PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }>>).flat();
      return requests.map((request) => keyOf(request.PutRequest?.Item ?? request.DeleteRequest?.Key));
    }
    default:
      return [];
  }
}

/**
 * Counts the commands a client sends (by name, e.g. `PutItemCommand`), how many succeeded, and the
 * most that were in flight at once. For "costs no write" and "bounded concurrency" assertions.
 * It also keeps which items each successful write touched (a BatchWriteItem counts each of its
 * items), and when, so a benchmark can count writes per partition key as DynamoDB would limit them.
 */
export function watchCommands(client: DynamoDBClient) {
  const sent = new Map<string, number>();
  const succeeded = new Map<string, number>();
  let written: Array<{ pk: string; sk: string; units: number; at: number }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      bump(sent, name);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // When the write was sent: DynamoDB counts a partition's writes as they arrive.
      const at = performance.now();
      try {
        const result = await next(args);
        bump(succeeded, name);
        // What DynamoDB left unprocessed (a throttled table) was not written.
        const unprocessed = new Set(writtenKeys(name, { RequestItems: (result.output as { UnprocessedItems?: unknown }).UnprocessedItems }).map((key) => `${key.pk}\n${key.sk}`));
        for (const key of writtenKeys(name, args.input as Record<string, unknown>)) if (!unprocessed.has(`${key.pk}\n${key.sk}`)) written.push({ ...key, at });
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
    /** Commands sent and not answered yet. */
    inFlight: () => inFlight,
    /** Items written by successful commands whose key matches (all of them without a test). */
    itemsWritten: (matches?: (key: { pk: string; sk: string }) => boolean) => (matches ? written.filter(matches).length : written.length),
    /** The write units of those items, as DynamoDB sizes them (local/table-throughput.ts). */
    unitsWritten: (matches?: (key: { pk: string; sk: string }) => boolean) => (matches ? written.filter(matches) : written).reduce((sum, write) => sum + write.units, 0),
    /** The most item writes one partition key took within any one second (DynamoDB serves about 1,000). */
    maxWritesPerKeySecond: (matches?: (key: { pk: string; sk: string }) => boolean) => {
      const byKey = new Map<string, number[]>();
      for (const write of written) {
        if (matches && !matches(write)) continue;
        const times = byKey.get(write.pk) ?? [];
        times.push(write.at);
        byKey.set(write.pk, times);
      }
      let most = 0;
      for (const times of byKey.values()) {
        times.sort((a, b) => a - b);
        for (let first = 0, last = 0; last < times.length; last += 1) {
          while (times[last]! - times[first]! >= 1000) first += 1;
          most = Math.max(most, last - first + 1);
        }
      }
      return most;
    },
    reset() {
      sent.clear();
      succeeded.clear();
      written = [];
      maxInFlight = 0;
    },
  };
}
