import { afterAll, beforeAll } from 'vitest';
import { Store } from '../../shared/store/store';
import { startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';

export { localDynamoClient } from '../../local/local-dynamo';
export type { LocalDynamo };

/** An in-memory dynalite on a loopback port the OS picks, with the gateway's table created. */
export function startDynamo(tableName = 'gateway-test'): Promise<LocalDynamo> {
  return startLocalDynamo({ tableName });
}

export { watchCommands } from '../../local/local-dynamo';

/**
 * A store on its own in-memory dynalite for one test file: started before its tests, stopped
 * after. Use `db.store` and `db.dynamo` inside tests (they exist once `beforeAll` has run).
 */
export function useStore(): { readonly store: Store; readonly dynamo: LocalDynamo } {
  const held = {} as { store: Store; dynamo: LocalDynamo };
  beforeAll(async () => {
    held.dynamo = await startDynamo();
    held.store = new Store({ client: held.dynamo.client, tableName: held.dynamo.tableName });
  });
  afterAll(() => held.dynamo.stop());
  return held;
}
