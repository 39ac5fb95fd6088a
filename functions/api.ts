import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';
import { reactionsTo } from '../shared/connections/registry';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { withReactions } from '../shared/events/reactions';
import { provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { signedTable } from '../shared/store/signed-table-client';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';

// Sync now, Disconnect (purge jobs) and engagement events go to their queues; conversations start
// lifecycles, tell the poller fleet and publish events (connectors may react to them).
provideAwsServices({
  table: signedTable,
  vault: signedKmsVault,
  queues: signedSqsQueues,
  events: withReactions(eventBridgeEvents, reactionsTo),
  stateMachines: stepFunctionsStateMachines,
  pollerNotices: sqsPollerNotices,
});
checkSettingsAtLoad('api');

const dispatch = createRouter(apiRoutes());

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = httpFunction(dispatch);
