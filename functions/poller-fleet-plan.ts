import * as z from 'zod';
import { gateway } from '../shared/gateway';
import { log } from '../shared/log/logger';
import { FleetPlanInput, planFleet } from '../shared/messaging/fleet';

/** The most pollers the fleet state machine runs at once (lib/conversations.ts `maxPollerShards`). */
const MAX_SHARDS = z.coerce.number().int().min(1).default(50).parse(process.env.POLLER_MAX_SHARDS);

/** Sizes the poller fleet to the live conversations; one fleet execution at a time (a lease). */
export const handler = async (event: unknown) => planFleet(gateway(), FleetPlanInput.parse(event), { maxShards: MAX_SHARDS, log });
