import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { taskFunction } from '../shared/handler/engine';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { log } from '../shared/log/logger';
import { FleetPlanInput, MAX_POLLER_SHARDS, planFleet } from '../shared/messaging/fleet';

provideAwsServices({ table: signedTable });
checkSettingsAtLoad('poller-fleet-plan');

/**
 * Sizes the poller fleet to the live conversations; one fleet execution at a time (a lease). The
 * count is reported (LiveConversations) for the "live conversations, no poller" alarm.
 */
export const handler = taskFunction(async (event: unknown) => planFleet(gateway(), FleetPlanInput.parse(event), { maxShards: MAX_POLLER_SHARDS, log }));
