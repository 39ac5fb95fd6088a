import * as z from 'zod/mini';
import type { GatewayEvent } from '../events/gateway-event';
import type { EventReaction } from '../events/reactions';
import type { EngagementEvent } from '../queues/messages';
import { acceptEngagementEvents } from './delivery';
import { allowsIngestion, DataSyncSettings } from './settings';
import * as store from '../store/store';

/**
 * The setting "conversation outcomes as engagement events" (`conversationEndedEvents`): each
 * `conversation.ended` the gateway publishes becomes one engagement event of the declared schema,
 * sent like the playbooks' own events (at once, or held for the Hourly or Daily schedule).
 *
 * The event id is derived from the conversation, so a conversation.ended published twice (a
 * retried worker) is one record on the platform (ingestion upserts by event_id). A conversation
 * with no known end-user email makes no engagement event: customer_email is required.
 */

export const CONVERSATION_ENDED_TYPE = 'conversation_ended';

/** What the conversation.ended detail carries (docs/events.md); other fields pass through. */
const ConversationEndedData = z.looseObject({
  conversationId: z.string().check(z.minLength(1), z.maxLength(200)),
  endedAt: z.optional(z.iso.datetime({ offset: true })),
  endUserEmail: z.optional(z.email()),
  channel: z.optional(z.string().check(z.maxLength(255))),
});

/** The engagement event for an ended conversation, or undefined when it cannot make one. Pure. */
export function engagementEventOf(event: GatewayEvent): EngagementEvent | undefined {
  const data = ConversationEndedData.safeParse(event.data);
  if (!data.success || !data.data.endUserEmail) return undefined;
  return {
    event_id: `conversation_ended:${data.data.conversationId}`,
    customer_email: data.data.endUserEmail,
    event_type: CONVERSATION_ENDED_TYPE,
    event_timestamp: data.data.endedAt ?? event.occurredAt,
    conversation_id: data.data.conversationId,
    channel: data.data.channel ?? event.source,
  };
}

export const conversationEndedReaction: EventReaction = async (event, { gateway, log }) => {
  const connection = await store.getConnection(gateway.table, event.accountId, 'data');
  if (!connection) return;
  const settings = DataSyncSettings.safeParse(connection.syncSettings);
  if (!settings.success || !settings.data.conversationEndedEvents) return;
  if (!allowsIngestion(settings.data)) {
    log.warn('conversation.ended not sent as an engagement event: the data connection is not set to write engagement events');
    return;
  }
  const engagement = engagementEventOf(event);
  if (!engagement) {
    log.info('conversation.ended makes no engagement event: no end-user email is known, or the detail is not readable');
    return;
  }
  await acceptEngagementEvents(gateway, event.accountId, settings.data, [engagement]);
};
