import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyResultV2 } from 'aws-lambda';
import { requestFromApiGateway, responseToApiGateway } from '../shared/api/http';
import { createRouter } from '../shared/api/router';
import { apiRoutes } from '../shared/api/routes/index';
import { eventBridgeEvents } from '../shared/events/event-bridge-publisher';
import { provideAwsServices } from '../shared/gateway';
import { sqsQueues } from '../shared/queues/sqs-queue';
import { sqsPollerNotices } from '../shared/workflows/poller-notices';
import { stepFunctionsStateMachines } from '../shared/workflows/state-machines';

// Sync now and ingestion queue work; conversations start lifecycles, tell the poller fleet and publish events.
provideAwsServices({ queues: sqsQueues, events: eventBridgeEvents, stateMachines: stepFunctionsStateMachines, pollerNotices: sqsPollerNotices });

const dispatch = createRouter(apiRoutes());

/** `/api/v1/*`: the dashboard's and playbooks' API. */
export const handler = async (event: APIGatewayProxyEventV2WithJWTAuthorizer): Promise<APIGatewayProxyResultV2> =>
  responseToApiGateway(await dispatch(requestFromApiGateway(event)));
