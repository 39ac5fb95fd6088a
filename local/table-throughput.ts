import { ProvisionedThroughputExceededException, type AttributeValue, type BatchWriteItemCommandOutput, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';

/**
 * A table's write throughput, enforced on a local DynamoDB client as DynamoDB enforces it: dynalite
 * takes every write as fast as it can, a deployed table does not. A new on-demand table takes 4,000
 * write units a second (and its index as many) until it has grown; pre-warmed, what its
 * `WarmThroughput` says (lib/storage.ts, `tableWarmWriteUnits`).
 *
 * Each write's units are counted when it arrives, in a window of the last second. (An item with
 * index keys is written to the index as well, against the index's own 4,000 units: never the fuller
 * of the two, so only the table's are counted.) Past the
 * limit, a BatchWriteItem's items are answered as `UnprocessedItems` (all of them refused: a
 * `ProvisionedThroughputExceededException`), a single write with that exception, as DynamoDB does.
 * The middleware sits inside the SDK's retries, so a refused request is retried by the SDK with
 * its backoff, as one DynamoDB refused would be.
 */
export function limitTableWrites(client: DynamoDBClient, options: { writeUnitsPerSecond: number; now?: () => number }): TableWriteCounts {
  const now = options.now ?? (() => performance.now());
  const table = new UnitsWindow(options.writeUnitsPerSecond);
  const counts: TableWriteCounts = { unitsTaken: 0, unitsRefused: 0, requestsRefused: 0, refusedBy: {} };
  /** Whether this item's write fits the last second's room (and, if so, counts it). */
  const admit = (command: string, item: Record<string, unknown> | undefined, at: number): boolean => {
    const units = itemWriteUnits(item);
    if (!table.fits(units, at)) {
      counts.unitsRefused += units;
      counts.refusedBy[command] = (counts.refusedBy[command] ?? 0) + units;

      return false;
    }
    table.take(units, at);
    counts.unitsTaken += units;

    return true;
  };
  const refused = () => {
    counts.requestsRefused += 1;
    return new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded.', $metadata: {} });
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      const at = now();
      switch (context.commandName) {
        case 'BatchWriteItemCommand': {
          const requestItems = input.RequestItems as Record<string, WriteRequest[]>;
          const accepted = new Map<string, Set<number>>();
          const unprocessed: Record<string, WriteRequest[]> = {};
          for (const [name, requests] of Object.entries(requestItems)) {
            requests.forEach((request, position) => {
              const item = request.PutRequest?.Item ?? request.DeleteRequest?.Key;
              if (admit('BatchWriteItem', item, at)) accepted.set(name, (accepted.get(name) ?? new Set()).add(position));
              else (unprocessed[name] ??= []).push(request);
            });
          }
          if (accepted.size === 0) throw refused();
          if (Object.keys(unprocessed).length === 0) return next(args);
          // Only the accepted items go to the table: the request's JSON body, cut to them.
          const request = args.request as { body: string | Uint8Array; headers: Record<string, string> };
          const sent = typeof request.body === 'string' ? request.body : Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength).toString('utf8');
          const body = JSON.parse(sent) as { RequestItems: Record<string, unknown[]> };
          for (const name of Object.keys(body.RequestItems)) {
            const kept = accepted.get(name);
            if (kept) body.RequestItems[name] = body.RequestItems[name]!.filter((_, position) => kept.has(position));
            else delete body.RequestItems[name];
          }
          const text = JSON.stringify(body);
          const cut = Object.assign(Object.create(Object.getPrototypeOf(request) as object) as object, request, { body: text, headers: { ...request.headers, 'content-length': String(Buffer.byteLength(text)) } });
          const result = await next({ ...args, request: cut });
          const output = result.output as BatchWriteItemCommandOutput;
          const merged = { ...output.UnprocessedItems };
          for (const [name, requests] of Object.entries(unprocessed)) merged[name] = [...(merged[name] ?? []), ...requests];
          output.UnprocessedItems = merged;
          return result;
        }
        case 'PutItemCommand':
        case 'UpdateItemCommand':
        case 'DeleteItemCommand':
          if (!admit(String(context.commandName).replace(/Command$/, ''), (input.Item ?? input.Key) as Record<string, unknown> | undefined, at)) throw refused();
          return next(args);
        default:
          return next(args);
      }
    },
    // Inside the SDK's retries (finalizeRequest, after its high-priority retry middleware), as DynamoDB's refusals are.
    { step: 'finalizeRequest', priority: 'low', name: 'localTableThroughput' },
  );
  return counts;
}

/** What the limit let through and refused so far (write units, and requests refused whole). */
export interface TableWriteCounts {
  unitsTaken: number;
  unitsRefused: number;
  requestsRefused: number;
  /** Units refused by command (`BatchWriteItem`, `PutItem`, ...). */
  refusedBy: Record<string, number>;
}

/** DynamoDB's write units for an item: 1 KB of its size each, rounded up (a key alone, a delete, is 1). */
export function itemWriteUnits(item: Record<string, unknown> | undefined): number {
  return Math.max(1, Math.ceil(itemBytes(item ?? {}) / 1024));
}

/**
 * An item's size as DynamoDB counts it ("Item sizes and formats", DynamoDB Developer Guide): each
 * attribute's name in UTF-8 bytes plus its value's size. Not the length of its JSON, which counts
 * type tags, quotes and braces DynamoDB does not: a 900-byte item is 1 unit, not 2.
 */
export function itemBytes(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueBytes(value as AttributeValue);
  return bytes;
}

/** A value's size: strings in UTF-8 bytes, binary in raw bytes, numbers a byte per two significant digits plus one, lists and maps 3 bytes plus a byte an element. */
function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, member) => sum + Buffer.byteLength(member), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, member) => sum + numberBytes(member), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, member) => sum + member.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
  if (value.M !== undefined) return 3 + Object.keys(value.M).length + itemBytes(value.M);
  return 0;
}

/** A number's size: leading and trailing zeros trimmed, a byte per two significant digits, plus one. */
function numberBytes(number: string): number {
  const digits = number.replace(/^[-+]/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Write units taken in the last second. */
class UnitsWindow {
  private readonly taken: Array<{ at: number; units: number }> = [];
  private total = 0;

  constructor(private readonly limit: number) {}

  fits(units: number, at: number): boolean {
    while (this.taken.length > 0 && this.taken[0]!.at <= at - 1000) this.total -= this.taken.shift()!.units;
    return this.total + units <= this.limit;
  }

  take(units: number, at: number): void {
    this.taken.push({ at, units });
    this.total += units;
  }
}

/** The client with the table's write throughput enforced when `writeUnitsPerSecond` is given (the local runtime's option). */
export function withTableThroughput(client: DynamoDBClient, writeUnitsPerSecond: number | undefined): DynamoDBClient {
  if (writeUnitsPerSecond !== undefined) limitTableWrites(client, { writeUnitsPerSecond });
  return client;
}
