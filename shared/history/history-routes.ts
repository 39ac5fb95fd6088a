import { connectors } from '../connections/registry';
import { assertAccountAccess } from '../api/caller';
import { problems } from '../api/problem';
import { route } from '../api/route';
import { AccountParams } from '../api/routes/params';
import { ConnectionParams } from '../api/routes/connection-params';
import { decodeCursor, encodeCursor } from '../reads/cursor';
import { addHistograms, dayOf, daySeries, hourSeries, lastRefusals, medianOfHistogram } from './history-decisions';
import { ConversationStats, ConversationStatsQuery, HISTORY_DAYS, SyncHistoryPage, SyncHistoryQuery, WebhookDeliveries } from './history-schemas';
import * as history from './history-store';

const DAY_MS = 86_400_000;

/** The dashboard's history views: what happened over time, read from the history items (shared/history/history-store.ts). */
export const historyRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/syncs/history',
    operationId: 'listSyncHistory',
    summary: 'Every sync run of the connection’s data objects in the last 30 days, newest first, paged',
    params: ConnectionParams,
    query: SyncHistoryQuery,
    response: { status: 200, description: 'A page of runs', schema: SyncHistoryPage },
    async handle({ params, query, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const syncing = connectors.syncing()[params.connector];
      if (!syncing) throw problems.notFound(`The ${params.connector} connector has no scheduled syncs.`);
      if (query.object !== undefined && !syncing.sync.objects.includes(query.object)) {
        throw problems.invalidParameter([{ path: 'object', message: `not a data object of the ${params.connector} connector: one of ${syncing.sync.objects.join(', ')}` }]);
      }
      const startKey = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (query.cursor !== undefined && startKey === undefined) {
        throw problems.invalidParameter([{ path: 'cursor', message: 'not a cursor this gateway gave: pass nextCursor from the previous page unchanged' }]);
      }
      const page = await history.listSyncRuns(gateway.table, params.accountId, params.connector, {
        limit: query.limit,
        sinceMs: gateway.now() - HISTORY_DAYS.syncRuns * DAY_MS,
        ...(startKey ? { startKey } : {}),
        ...(query.object ? { object: query.object } : {}),
      });
      return { runs: page.runs, ...(page.lastKey ? { nextCursor: encodeCursor(page.lastKey) } : {}) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/connections/{connector}/webhooks/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: 'Webhook deliveries per hour over the last 7 days: verified, refused by reason, duplicates; the last refusals',
    params: ConnectionParams,
    response: { status: 200, description: 'Every hour of the last 7 days, and the last refusals (reason and time only)', schema: WebhookDeliveries },
    async handle({ params, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      if (!connectors.get(params.connector).webhooks) throw problems.notFound(`The ${params.connector} connector receives no webhooks.`);
      const now = gateway.now();
      const since = now - (HISTORY_DAYS.deliveries * 24 - 1) * 3_600_000;
      const stored = await history.listDeliveryHours(gateway.table, params.accountId, params.connector, since);
      return {
        hours: hourSeries(since, now, stored.map(({ lastRefusedAt: _kept, ...hour }) => hour)),
        lastRefused: lastRefusals(stored),
      };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/conversations/stats',
    operationId: 'getConversationStats',
    summary: 'Conversations started, handed off, ended and expired per day; the live count; the median time to the first agent message',
    params: AccountParams,
    query: ConversationStatsQuery,
    response: { status: 200, description: 'One entry per day, oldest first', schema: ConversationStats },
    async handle({ params, query, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      const now = gateway.now();
      const firstDay = dayOf(now - (query.days - 1) * DAY_MS);
      const [stored, live] = await Promise.all([history.listConversationDays(gateway.table, params.accountId, firstDay), history.liveConversations(gateway.table, params.accountId)]);
      const median = medianOfHistogram(addHistograms(stored.map((entry) => entry.histogram)));
      return {
        days: daySeries(firstDay, dayOf(now), stored.map((entry) => entry.day)),
        live,
        ...(median === undefined ? {} : { medianFirstAgentMessageSeconds: median }),
      };
    },
  }),
];
