import * as z from 'zod';
import { DataSetupError } from './auth';
import { dataClient } from './client';
import { dataProblem } from './errors';
import { DataSyncSettings, allowsIngestion, allowsProfileReads } from './settings';
import { IngestionConfig } from './ingestion';
import { ingestionSchemaDocument } from './ingestion-schema';
import { profileByEmail, UnifiedProfile } from './query';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import { EngagementEvent } from '../queues/messages';
import { assertAccountAccess, type Caller } from '../api/caller';
import { json } from '../api/http';
import { ProblemError, problems } from '../api/problem';
import { route } from '../api/route';
import { AccountParams } from '../api/routes/params';

/**
 * The data connector's routes: playbooks send engagement events (queued, then ingested by the
 * ingestion worker) and read unified profiles; the dashboard fetches the schema to upload to the
 * platform's ingestion connector.
 */

/** Events per request; the worker sends them on in requests of at most 50. */
export const MAX_EVENTS_PER_REQUEST = 500;

const EngagementEventsBody = z.strictObject({
  events: z.array(EngagementEvent).min(1).max(MAX_EVENTS_PER_REQUEST).describe(`1 to ${MAX_EVENTS_PER_REQUEST} engagement events`),
});

function playbookAccount(caller: Caller): string {
  if (!caller.playbook || !caller.accountId) throw problems.unauthorized('Send a playbook API key: Authorization: Bearer igk_...');
  return caller.accountId;
}

const noDataConnection = () => problems.notFound('The account has no data platform connection: connect it under Integrations.');

/** The settings forbid this use of the connection: a 409 that says which setting to change. */
const notAllowed = (what: string, remedy: string) =>
  new ProblemError({ type: 'urn:integration-gateway:problem:not-allowed-by-settings', title: 'Not allowed by the sync settings', status: 409, detail: what, remedy });

async function dataConnection(gateway: Gateway, accountId: string) {
  const connection = await gateway.store.getConnection(accountId, 'data');
  if (!connection) throw noDataConnection();
  return { connection, settings: DataSyncSettings.parse(connection.syncSettings) };
}

async function dataSession(gateway: Gateway, accountId: string) {
  const { connection, settings } = await dataConnection(gateway, accountId);
  if (!allowsProfileReads(settings)) {
    throw notAllowed(
      'The data connection is not set to read unified profiles.',
      'Set Sync direction to Read only or Read + Write, Data operation to Query or Both, and include Unified Individual.',
    );
  }
  const credentials = await gateway.vault.open({ accountId, connector: 'data' }, connection.credentials);
  try {
    return dataClient({ env: gateway.env, accountId, config: connection.config, credentials });
  } catch (error) {
    if (!(error instanceof DataSetupError)) throw error;
    throw new ProblemError({
      type: 'urn:integration-gateway:problem:data-connection-unusable',
      title: 'The data connection cannot be used',
      status: 409,
      detail: error.message,
      remedy: 'Reconnect the data platform under Integrations with a valid private key.',
    });
  }
}

/**
 * A data read that failed, in the spec's words (its Errors table): what went wrong and what to do.
 * A failure only the user can fix (the key, the OAuth client, a scope) is a 409 and marks the
 * connection's health, as Test Connection would; rate limits and outages are a 503.
 */
async function dataReadProblem(gateway: Gateway, accountId: string, error: PlatformError): Promise<ProblemError> {
  const problem = dataProblem(error);
  // The platform's own words (secrets masked) help support; the query is never quoted.
  const detail = problem.platformMessage ? `${problem.reason} The data platform said: ${problem.platformMessage}` : problem.reason;
  if (problem.health === 'needs_reconnect') {
    const checkedAt = new Date(gateway.now()).toISOString();
    await gateway.store.updateConnectionHealth(accountId, 'data', { state: 'needs_reconnect', checkedAt, reason: problem.reason, remedy: problem.remedy });
    return new ProblemError({
      type: 'urn:integration-gateway:problem:data-connection-needs-reconnect',
      title: 'The data connection needs attention',
      status: 409,
      detail,
      remedy: problem.remedy,
    });
  }
  return error.retryable
    ? new ProblemError({ type: 'urn:integration-gateway:problem:data-platform-unavailable', title: 'The data platform is not available right now', status: 503, detail, remedy: problem.remedy })
    : new ProblemError({ type: 'urn:integration-gateway:problem:data-platform', title: 'The data platform refused the request', status: 502, detail, remedy: problem.remedy });
}

export const dataRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/playbook/engagement-events',
    operationId: 'sendEngagementEvents',
    summary: 'Queue engagement events for the data platform (ingested within minutes, at least once)',
    access: 'playbook',
    params: z.object({}),
    body: EngagementEventsBody,
    response: { status: 202, description: 'Queued', schema: z.object({ accepted: z.number().int() }) },
    async handle({ body, caller, gateway, log }) {
      const accountId = playbookAccount(caller);
      const { settings } = await dataConnection(gateway, accountId);
      if (!allowsIngestion(settings)) {
        throw notAllowed(
          'The data connection is not set to write engagement events.',
          'Set Sync direction to Write only or Read + Write, Data operation to Ingest or Both, and include Engagement.',
        );
      }
      await gateway.queues.ingestion.send(body.events.map((event) => ({ accountId, event })));
      log.info('engagement events queued', { count: body.events.length });
      return json(202, { accepted: body.events.length });
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/data/ingestion-schema',
    operationId: 'getIngestionSchema',
    summary: "The OpenAPI 3.0 schema to upload to the data platform's ingestion connector",
    params: AccountParams,
    response: { status: 200, description: 'An OpenAPI 3.0.3 document' },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const connection = await gateway.store.getConnection(params.accountId, 'data');
      const config = IngestionConfig.safeParse(connection?.config ?? {});
      return json(200, ingestionSchemaDocument(config.success ? config.data.ingestionObject : undefined));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/profiles/{email}',
    operationId: 'getUnifiedProfile',
    summary: 'The unified profile with this email address, from the data platform',
    access: 'playbook',
    params: z.object({ email: z.email().describe("The individual's email address") }),
    response: { status: 200, description: 'The unified profile', schema: UnifiedProfile },
    async handle({ params, caller, gateway }) {
      const accountId = playbookAccount(caller);
      const session = await dataSession(gateway, accountId);
      try {
        const profile = await profileByEmail(session, params.email);
        // The email is not echoed.
        if (!profile) throw problems.notFound('No unified profile has that email address.');
        return profile;
      } catch (error) {
        throw error instanceof PlatformError ? await dataReadProblem(gateway, accountId, error) : error;
      }
    },
  }),
];
