import * as z from 'zod/mini';
import { GatewayEvent } from '../../events/gateway-event';
import { PlaybookEventType } from '../../events/playbook-events';
import { connectors } from '../../connections/registry';
import { gatewayBaseUrl, webhookEndpoint, WebhookEndpoint } from '../../webhooks/addresses';
import { assertAccountAccess } from '../caller';
import { ProblemError } from '../problem';
import { route } from '../route';
import { AccountParams } from './params';
import * as store from '../../store/store';

const EventsQuery = z.object({
  type: z.optional(PlaybookEventType).check(z.describe('Only events of this type')),
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(500)), 50).check(z.describe('At most this many, newest first')),
});

export const webhookRoutes = [
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/webhooks',
    operationId: 'listWebhookEndpoints',
    summary: 'The webhook addresses to enter on each platform, and whether deliveries can be verified (no secrets)',
    params: AccountParams,
    response: { status: 200, description: 'One endpoint per platform', schema: z.object({ webhooks: z.array(WebhookEndpoint) }) },
    async handle({ params, caller, gateway, request }) {
      assertAccountAccess(caller, params.accountId);
      const baseUrl = gatewayBaseUrl(gateway.env, request);
      const receiving = connectors.withWebhooks();
      const connections = await Promise.all(receiving.map((connector) => store.getConnection(gateway.table, params.accountId, connector.name)));
      return { webhooks: receiving.map((connector, i) => webhookEndpoint(baseUrl, params.accountId, connector, connections[i])) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/accounts/{accountId}/events',
    operationId: 'listRecentEvents',
    summary: 'Recent normalised events published for the account’s playbooks (local runtime)',
    params: AccountParams,
    query: EventsQuery,
    response: { status: 200, description: 'Newest first', schema: z.object({ events: z.array(GatewayEvent) }) },
    async handle({ params, query, caller, gateway }) {
      assertAccountAccess(caller, params.accountId);
      if (!gateway.events.recent) throw feedIsEventBridge();
      const events = gateway.events
        .recent(params.accountId)
        .filter((event) => !query.type || event.type === query.type)
        .reverse()
        .slice(0, query.limit);
      return { events };
    },
  }),
];

/**
 * In AWS the events live on EventBridge: a rule delivers them (filtered by type, account...) and
 * the bus's archive replays them; a second copy in the table would cost a write per event for a
 * feed nobody needs there.
 */
function feedIsEventBridge(): ProblemError {
  return new ProblemError({
    type: 'urn:integration-gateway:problem:events-on-eventbridge',
    title: 'Read the events from EventBridge',
    status: 501,
    detail: 'The recent-events feed is served by the local runtime. Deployed, the gateway publishes these events on its EventBridge bus.',
    remedy:
      'Add an EventBridge rule on the bus "integration-gateway" (source integration-gateway.payment or integration-gateway.billing, detail-type the event type, detail.accountId your account) to deliver them; replay past ones from the bus archive.',
  });
}
