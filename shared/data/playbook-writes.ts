import * as z from 'zod/mini';
import type { EngagementEvent } from '../queues/messages';

/**
 * The Qualification Agent's and Nurture & Conversion's writes, each one engagement event of the
 * declared schema (event_id, customer_email, event_type, event_timestamp, conversation_id,
 * channel). The schema has no field for a status or a score, so they travel in `event_type`:
 * `qualification.<status>`, `conversation_outcome.<outcome>`, `lead_score.<0-100>`; a data
 * transform on the platform can split them out. `id` is the caller's: the event id is derived from
 * it, so sending a write again replaces it on the platform (ingestion upserts by event_id).
 */

const Word = z.string().check(z.regex(/^[a-z][a-z0-9_]{0,63}$/, 'lower-case letters, digits and underscores, starting with a letter'));
const Common = {
  id: z
    .string()
    .check(z.regex(/^[A-Za-z0-9._:-]{1,128}$/, 'letters, digits, . _ : - (at most 128)'), z.describe('Your id for this write; sending it again replaces it')),
  email: z.email().check(z.describe("The person's email address")),
  at: z.iso.datetime({ offset: true }).check(z.describe('When it happened')),
  conversationId: z.optional(z.string().check(z.maxLength(200))),
  channel: z.optional(z.string().check(z.maxLength(100))),
};

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
export const PlaybookWrite = z.lazy(() =>
  z
    .discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('qualification'), status: Word.check(z.describe('e.g. qualified, disqualified, needs_follow_up')), ...Common }),
      z.strictObject({ kind: z.literal('conversation_outcome'), outcome: Word.check(z.describe('e.g. converted, booked_meeting, lost')), ...Common }),
      z.strictObject({ kind: z.literal('lead_score'), score: z.number().check(z.int(), z.minimum(0), z.maximum(100)), ...Common }),
    ])
    .register(z.globalRegistry, { id: 'PlaybookWrite' }),
);
export type PlaybookWrite = z.infer<typeof PlaybookWrite>;

export const PlaybookWrites = z.lazy(() =>
  z.strictObject({ writes: z.array(PlaybookWrite).check(z.minLength(1), z.maxLength(500)) }).register(z.globalRegistry, { id: 'PlaybookWrites' }),
);

export function toEngagementEvent(write: PlaybookWrite): EngagementEvent {
  const type =
    write.kind === 'qualification'
      ? `qualification.${write.status}`
      : write.kind === 'conversation_outcome'
        ? `conversation_outcome.${write.outcome}`
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
