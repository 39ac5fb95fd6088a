import * as z from 'zod/mini';
import { DataSetupError } from './auth';
import { DataCatalog } from './catalog';
import { dataClient } from './client';
import { acceptEngagementEvents } from './delivery';
import { dataProblem } from './errors';
import { DataSyncSettings, allowsIngestion, allowsProfileReads, allowsQueries } from './settings';
import { IngestionConfig } from './ingestion';
import { ingestionSchemaDocument } from './ingestion-schema';
import { DEFAULT_PROFILE_MAX_AGE_SECONDS, MAX_PROFILE_MAX_AGE_SECONDS, profileCache } from './profile-cache';
import { profileByEmail, UnifiedProfile } from './query';
import { cursorKey } from './query-cursor';
import {
  aggregate,
  DataAggregateAnswer,
  DataAggregateQuery,
  DataReadError,
  DataRecordsPage,
  DataRecordsQuery,
  engagementHistory,
  EngagementHistory,
  EngagementHistoryQuery,
  queryRecords,
  type DataReadContext,
} from './reads';
import { SqlBuildError, unsafeValueReason } from './sql';
import { PlaybookWrite, PlaybookWrites, toEngagementEvent } from './playbook-writes';
import type { Gateway } from '../gateway';
import { PlatformError } from '../http/platform-error';
import { EngagementEvent } from '../queues/messages';
import { assertAccountAccess, playbookAccountOf } from '../api/caller';
import { json } from '../api/http';
import { ProblemError, problems } from '../api/problem';
import { route } from '../api/route';
import { AccountParams } from '../api/routes/params';
import * as store from '../store/store';

/**
 * The data connector's routes. Playbooks (API keys): send engagement events and their typed
 * writes (qualification events, conversation outcomes, lead scores), read records and profiles
 * (Activation), a person's engagement (Qualification), aggregates (Lead Scoring) and a real-time
 * profile (Personalization). The dashboard: the ingestion schema to upload, and what became of
 * the account's engagement events lately. Every read is refused before anything reaches the
 * platform when an object, column, operator, value, limit or cursor is not allowed.
 */

/** Events per request; the worker sends them on in requests of at most 50. */
export const MAX_EVENTS_PER_REQUEST = 500;

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
const EngagementEventsBody = z.lazy(() =>
  z.strictObject({
    events: z.array(EngagementEvent).check(z.minLength(1), z.maxLength(MAX_EVENTS_PER_REQUEST), z.describe(`1 to ${MAX_EVENTS_PER_REQUEST} engagement events`)),
  }),
);

const Accepted = z.lazy(() =>
  z
    .object({
      accepted: z.number().check(z.int()),
      delivery: z.enum(['real_time', 'hourly', 'daily']).check(z.describe('When they are sent: at once, or at the next hourly or daily schedule')),
    })
    .register(z.globalRegistry, { id: 'EngagementEventsAccepted' }),
);

/**
 * An email in a path. Any local part the address syntax allows is read, apostrophes (o'brien@),
 * `+` and internationalised letters (josé@) included: it is quoted exactly. Refused only what a
 * SQL literal cannot carry (control characters, lone surrogates).
 */
const SafeEmail = z.email({ pattern: z.regexes.unicodeEmail }).check(
  z.maxLength(254),
  z.superRefine((value, context) => {
    const reason = unsafeValueReason(value);
    if (reason) context.addIssue({ code: 'custom', message: `refused: ${reason}, which a SQL string literal cannot carry; nothing was sent` });
  }),
  z.describe("The person's email address"),
);

const noDataConnection = () => problems.notFound('The account has no data platform connection: connect it under Integrations.');

/** The settings forbid this use of the connection: a 409 that says which setting to change. */
const notAllowed = (what: string, remedy: string) => problems.notAllowedBySettings('sync settings', what, remedy);

const READ_REMEDY = 'Set Sync direction to Read only or Read + Write and Data operation to Query or Both';
const WRITE_REMEDY = 'Set Sync direction to Write only or Read + Write, Data operation to Ingest or Both, and include Engagement.';

async function dataConnection(gateway: Gateway, accountId: string) {
  const connection = await store.getConnection(gateway.table, accountId, 'data');
  if (!connection) throw noDataConnection();
  return { connection, settings: DataSyncSettings.parse(connection.syncSettings) };
}

/** Everything a read needs; nothing is sent to the platform yet (the token is fetched on the first query). */
async function readContext(gateway: Gateway, accountId: string, needs?: { model: 'unified_individual' | 'engagement'; what: string; setting: string }) {
  const { connection, settings } = await dataConnection(gateway, accountId);
  if (!allowsQueries(settings)) throw notAllowed('The data connection is not set to query the data platform.', `${READ_REMEDY}.`);
  if (needs && !settings.dataModelObjects.includes(needs.model))
    throw notAllowed(`The data connection is not set to read ${needs.what}.`, `Include ${needs.setting} among the data model objects.`);
  const credentials = await gateway.vault.open({ accountId, connector: 'data' }, connection.credentials);
  let session: ReturnType<typeof dataClient>;
  try {
    session = dataClient({ env: gateway.env, accountId, config: connection.config, credentials, now: () => gateway.now() });
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
  const context: DataReadContext = {
    session,
    catalog: new DataCatalog(settings),
    accountId,
    cursorKey: cursorKey(accountId, credentials),
    now: () => gateway.now(),
  };
  return { context, connection, settings };
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
    await store.updateConnectionHealth(gateway.table, accountId, 'data', { state: 'needs_reconnect', checkedAt, reason: problem.reason, remedy: problem.remedy });
    return new ProblemError({
      type: 'urn:integration-gateway:problem:data-connection-needs-reconnect',
      title: 'The data connection needs attention',
      status: 409,
      detail,
      remedy: problem.remedy,
    });
  }
  return error.retryable
    ? new ProblemError({
        type: 'urn:integration-gateway:problem:data-platform-unavailable',
        title: 'The data platform is not available right now',
        status: 503,
        detail,
        remedy: problem.remedy,
      })
    : new ProblemError({
        type: 'urn:integration-gateway:problem:data-platform',
        title: 'The data platform refused the request',
        status: 502,
        detail,
        remedy: problem.remedy,
      });
}

/** Runs a read; refusals become 400 problems naming the field, platform failures 502. */
async function answering<T>(gateway: Gateway, accountId: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof DataReadError)
      throw problems.invalidBody([{ path: error.path, message: error.message }], 'The read asks for something the data connection does not allow.');
    if (error instanceof SqlBuildError)
      throw problems.invalidBody([{ path: '(body)', message: error.message }], 'The read asks for something the data connection does not allow.');
    if (error instanceof PlatformError) throw await dataReadProblem(gateway, accountId, error);
    throw error;
  }
}

async function acceptFor(gateway: Gateway, accountId: string, events: readonly EngagementEvent[]) {
  const { settings } = await dataConnection(gateway, accountId);
  if (!allowsIngestion(settings)) throw notAllowed('The data connection is not set to write engagement events.', WRITE_REMEDY);
  const { accepted } = await acceptEngagementEvents(gateway, accountId, settings, events);
  return { accepted, delivery: settings.frequency };
}

const RealtimeProfile = z
  .extend(UnifiedProfile, {
    freshness: z.object({
      source: z.enum(['cache', 'platform']).check(z.describe('Whether this answer came from the gateway’s short cache')),
      fetchedAt: z.iso.datetime().check(z.describe('When the gateway read it from the data platform')),
      ageSeconds: z.number().check(z.describe('How old the answer is')),
      note: z.optional(z.string()).check(z.describe('With CRM connector sync on: how far CRM-sourced fields may lag')),
    }),
  })
  .register(z.globalRegistry, { id: 'RealtimeProfile' });

const ProfileQuery = z.strictObject({
  maxAgeSeconds: z
    ._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(MAX_PROFILE_MAX_AGE_SECONDS)), DEFAULT_PROFILE_MAX_AGE_SECONDS)
    .check(z.describe(`Oldest cached answer accepted, 0-${MAX_PROFILE_MAX_AGE_SECONDS} seconds (0: read the platform now)`)),
});

const CRM_LAG_NOTE = 'CRM connector sync is on: CRM changes reach unified profiles 5-10 minutes later, plus identity resolution (typically 10-15 minutes).';

const DeliveryHour = z.lazy(() =>
  z.object({
    hour: z.string(),
    accepted: z.number().check(z.int()),
    held: z.number().check(z.int()),
    sent: z.number().check(z.int()),
    retried: z.number().check(z.int()),
    refused: z.number().check(z.int()),
    deadLettered: z.number().check(z.int()),
  }),
);
const EngagementDeliveries = z.lazy(() =>
  z
    .object({
      frequency: z.enum(['real_time', 'hourly', 'daily']),
      heldNow: z.number().check(z.int(), z.describe('Events waiting for the next hourly or daily send')),
      hours: z.array(DeliveryHour).check(z.describe('Per hour, oldest first: events accepted, held, sent, retried, refused, dead-lettered')),
    })
    .register(z.globalRegistry, { id: 'EngagementDeliveries' }),
);

export const dataRoutes = [
  route({
    method: 'POST',
    path: '/api/v1/playbook/engagement-events',
    operationId: 'sendEngagementEvents',
    summary: 'Send engagement events to the data platform: at once (Real-time) or at the next hourly or daily send; at least once',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'events', cost: (body) => body.events.length },
    body: EngagementEventsBody,
    response: { status: 202, description: 'Accepted', schema: Accepted },
    async handle({ body, caller, gateway, log }) {
      const accountId = playbookAccountOf(caller);
      const accepted = await acceptFor(gateway, accountId, body.events);
      log.info('engagement events accepted', { count: body.events.length, delivery: accepted.delivery });
      return json(202, accepted);
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/data/writes',
    operationId: 'sendPlaybookWrites',
    summary: 'Qualification events, conversation outcomes and lead scores, sent as engagement events',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'events', cost: (body) => body.writes.length },
    body: PlaybookWrites,
    response: { status: 202, description: 'Accepted', schema: Accepted },
    async handle({ body, caller, gateway, log }) {
      const accountId = playbookAccountOf(caller);
      const accepted = await acceptFor(
        gateway,
        accountId,
        body.writes.map((write: PlaybookWrite) => toEngagementEvent(write)),
      );
      log.info('playbook writes accepted', { count: body.writes.length, delivery: accepted.delivery });
      return json(202, accepted);
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/data/records',
    operationId: 'queryDataRecords',
    summary: 'Activation: records of a data model object (unified profiles by default), filtered and paged',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'reads' },
    body: DataRecordsQuery,
    response: { status: 200, description: 'One page; nextCursor when there is more', schema: DataRecordsPage },
    async handle({ body, caller, gateway }) {
      const accountId = playbookAccountOf(caller);
      const { context } = await readContext(gateway, accountId);
      return answering(gateway, accountId, () => queryRecords(context, body));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/data/engagement/{email}',
    operationId: 'getEngagementHistory',
    summary: "Qualification: one person's engagement events (the Engagement object), newest first",
    access: 'playbook',
    params: z.object({ email: SafeEmail }),
    quota: { kind: 'reads' },
    query: EngagementHistoryQuery,
    response: { status: 200, description: 'The events', schema: EngagementHistory },
    async handle({ params, query, caller, gateway }) {
      const accountId = playbookAccountOf(caller);
      const { context } = await readContext(gateway, accountId, { model: 'engagement', what: 'engagement data', setting: 'Engagement' });
      return answering(gateway, accountId, () => engagementHistory(context, params.email, query));
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/playbook/data/aggregates',
    operationId: 'aggregateData',
    summary: 'Lead Scoring: COUNT(*), SUM or AVG over a data model object, optionally grouped',
    access: 'playbook',
    params: z.object({}),
    quota: { kind: 'reads' },
    body: DataAggregateQuery,
    response: { status: 200, description: 'The value, or one per group', schema: DataAggregateAnswer },
    async handle({ body, caller, gateway }) {
      const accountId = playbookAccountOf(caller);
      const { context } = await readContext(gateway, accountId);
      return answering(gateway, accountId, () => aggregate(context, body));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/playbook/profiles/{email}',
    operationId: 'getUnifiedProfile',
    summary: 'Real-Time Personalization: the unified profile with this email, from a short cache whose age is stated',
    access: 'playbook',
    params: z.object({ email: SafeEmail }),
    quota: { kind: 'reads' },
    query: ProfileQuery,
    response: { status: 200, description: 'The unified profile', schema: RealtimeProfile },
    async handle({ params, query, caller, gateway }) {
      const accountId = playbookAccountOf(caller);
      const { settings, connection } = await dataConnection(gateway, accountId);
      if (!allowsProfileReads(settings))
        throw notAllowed('The data connection is not set to read unified profiles.', `${READ_REMEDY}, and include Unified Individual.`);
      const { context } = await readContext(gateway, accountId, { model: 'unified_individual', what: 'unified profiles', setting: 'Unified Individual' });
      const key = `${accountId}|${connection.version}|${params.email.toLowerCase()}`;
      const now = gateway.now();
      const read = await answering(gateway, accountId, () =>
        profileCache.get(key, query.maxAgeSeconds * 1000, now, () => profileByEmail(context.session, params.email)),
      );
      // The email is not echoed.
      if (!read.profile) throw problems.notFound('No unified profile has that email address.');
      return {
        ...read.profile,
        freshness: {
          source: read.cached ? ('cache' as const) : ('platform' as const),
          fetchedAt: new Date(read.fetchedAt).toISOString(),
          ageSeconds: Math.max(0, Math.round((now - read.fetchedAt) / 100) / 10),
          ...(settings.crmConnectorSync ? { note: CRM_LAG_NOTE } : {}),
        },
      };
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
      const connection = await store.getConnection(gateway.table, params.accountId, 'data');
      const config = IngestionConfig.safeParse(connection?.config ?? {});
      return json(200, ingestionSchemaDocument(config.success ? config.data.ingestionObject : undefined));
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/data/deliveries',
    operationId: 'getEngagementDeliveries',
    summary: "What became of the account's engagement events lately: accepted, held, sent, retried, refused, dead-lettered, per hour",
    params: AccountParams,
    query: z.strictObject({
      hours: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(168)), 24).check(z.describe('How many hours back, 1-168 (default 24)')),
    }),
    response: { status: 200, description: 'Counts per hour and the events held now', schema: EngagementDeliveries },
    async handle({ params, query, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const { settings } = await dataConnection(gateway, params.accountId);
      const [heldNow, hours] = await Promise.all([
        store.countHeldEvents(gateway.table, params.accountId, 'data'),
        store.listDeliveryCounts(gateway.table, params.accountId, 'data', gateway.now() - (query.hours - 1) * 3_600_000),
      ]);
      return { frequency: settings.frequency, heldNow, hours };
    },
  }),
];
