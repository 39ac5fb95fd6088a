import * as z from 'zod';
import type { EngagementEvent } from '../queues/messages';

/**
 * The Qualification Agent's and Nurture & Conversion's writes, each one engagement event of the
 * declared schema (event_id, customer_email, event_type, event_timestamp, conversation_id,
 * channel). The schema has no field for a status or a score, so they travel in `event_type`:
 * `qualification.<status>`, `conversation_outcome.<outcome>`, `lead_score.<0-100>`; a data
 * transform on the platform can split them out. `id` is the caller's: the event id is derived from
 * it, so sending a write again replaces it on the platform (ingestion upserts by event_id).
 */

const Word = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'lower-case letters, digits and underscores, starting with a letter');
const Common = {
  id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'letters, digits, . _ : - (at most 128)').describe('Your id for this write; sending it again replaces it'),
  email: z.email().describe("The person's email address"),
  at: z.iso.datetime({ offset: true }).describe('When it happened'),
  conversationId: z.string().max(200).optional(),
  channel: z.string().max(100).optional(),
};

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const PlaybookWrite = z.lazy(() =>
  z
    .discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('qualification'), status: Word.describe('e.g. qualified, disqualified, needs_follow_up'), ...Common }),
      z.strictObject({ kind: z.literal('conversation_outcome'), outcome: Word.describe('e.g. converted, booked_meeting, lost'), ...Common }),
      z.strictObject({ kind: z.literal('lead_score'), score: z.number().int().min(0).max(100), ...Common }),
    ])
    .meta({ id: 'PlaybookWrite' }),
);
export type PlaybookWrite = z.infer<typeof PlaybookWrite>;

export const PlaybookWrites = z.lazy(() =>
  z.strictObject({ writes: z.array(PlaybookWrite).min(1).max(500) }).meta({ id: 'PlaybookWrites' }),
);

export function toEngagementEvent(write: PlaybookWrite): EngagementEvent {
  const type =
    write.kind === 'qualification' ? `qualification.${write.status}`
    : write.kind === 'conversation_outcome' ? `conversation_outcome.${write.outcome}`
    : `lead_score.${write.score}`;
  return {
    event_id: `${write.kind}:${write.id}`,
    customer_email: write.email,
    event_type: type,
    event_timestamp: write.at,
    conversation_id: write.conversationId ?? '',
    channel: write.channel ?? '',
  };
}
