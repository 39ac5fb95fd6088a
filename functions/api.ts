import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';
import { provideAwsServices } from '../shared/gateway';
import { httpFunction } from '../shared/handler/gateway-handler';
import { traces } from '../shared/handler/traces';
import { sqsQueues } from '../shared/queues/sqs-queue';

// Sync now, Disconnect (purge jobs) and engagement events go to their queues.
provideAwsServices({ queues: sqsQueues });

const dispatch = createRouter(apiRoutes);

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = httpFunction('api', dispatch, { use: [traces()] });
