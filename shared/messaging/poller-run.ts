import type { Gateway } from '../gateway';
import type { Logger } from '../log/logger';
import { surgeEndsAt, type PollerInput } from './fleet';
import { PollerRun, type PollerStats } from './poller';
import * as store from '../store/store';

/** A poller run as the poller function (and the local fleet) runs it; apart from fleet.ts so the plan's bundle holds no poller. */

/** One more poller for the rest of the round, when new conversations found no room (one per second, fleet-wide). */
export async function requestSurge(gateway: Gateway): Promise<void> {
  const now = gateway.now();
  if (!(await store.takeFleetTurn(gateway.table, 'surge', now, 1_000))) return;
  const fleet = await store.getFleetLease(gateway.table);
  const endsAt = surgeEndsAt(now, fleet?.until, gateway.env.POLLER_RUN_SECONDS * 1000);
  if (endsAt !== undefined) await gateway.stateMachines.startFleet({ surge: { shard: 0, shards: 1, endsAt } });
}

/** A poller run as the poller function runs it (Lambda or the local fleet). */
export async function runPoller(gateway: Gateway, input: PollerInput, log: Logger, hooks: { onStart?: (run: PollerRun) => void } = {}): Promise<PollerStats> {
  const run = new PollerRun({ gateway, log, ...input, requestSurge: () => requestSurge(gateway) });
  hooks.onStart?.(run);
  return run.run();
}
