import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';

export { localDynamoClient } from '../../local/local-dynamo';
export type { LocalDynamo };

/** An in-memory dynalite on a loopback port the OS picks, with the gateway's table created. */
export function startDynamo(tableName = 'gateway-test'): Promise<LocalDynamo> {
  return startLocalDynamo({ tableName });
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
