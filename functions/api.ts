import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';
import { provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/http-function';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';

// Sync now, Disconnect (purge jobs) and engagement events go to their queues.
provideAwsServices({ queues: sqsQueues });
checkSettingsAtLoad('api');

const dispatch = createRouter(apiRoutes());

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = httpFunction(dispatch);
