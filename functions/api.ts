import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';
import { reactionsTo } from '../shared/connections/registry';
import { withReactions } from '../shared/events/reactions';
import { provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { signedSqsQueues } from '../shared/queues/signed-sqs-calls';
import { signedTable } from '../shared/store/signed-table-client';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

// A dashboard page after a quiet hour and a playbook's first read wait on this function's cold start:
// the table, the vault and the queues are signed calls (no SDK client: docs/cold-starts.md). Sync now,
// Disconnect (purge jobs) and engagement events go to their queues; conversations start lifecycles,
// tell the poller fleet and publish events (connectors may react to them): those three SDK clients
// load with the first request that needs them, in chunks of their own.
provideAwsServices({
  table: signedTable,
  vault: signedKmsVault,
  queues: signedSqsQueues,
  events: withReactions((env) => import('../shared/events/event-bridge-publisher').then((loaded) => loaded.eventBridgeEvents(env)), reactionsTo),
  stateMachines: (env) => import('../shared/workflows/state-machines').then((loaded) => loaded.stepFunctionsStateMachines(env)),
  pollerNotices: (env) => import('../shared/workflows/poller-notices').then((loaded) => loaded.sqsPollerNotices(env)),
});
checkSettingsAtLoad('api');

const dispatch = createRouter(apiRoutes());

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = httpFunction(dispatch);
