import * as z from 'zod';

/** Messaging sync settings, as the spec's Sync settings table lists them. */
export const MessagingSettings = z
  .strictObject({
    /** Inbound only (the end user starts), Outbound only (proactive invitations), or Both. */
    direction: z.enum(['inbound', 'outbound', 'both']).default('both'),
    /** Which message types are stored and published. */
    messageTypes: z
      .array(z.enum(['text', 'media', 'system_events']))
      .min(1, 'Choose at least one message type.')
      .refine((types) => new Set(types).size === types.length, 'Each message type once.')
      .default(['text', 'media', 'system_events']),
    /** Whether ended conversations' transcripts are assembled and stored. */
    transcriptStorage: z.enum(['enabled', 'disabled']).default('enabled'),
    /** Pre-chat fields (by label) to the gateway's profile attributes. */
    prechatMapping: z.record(z.string().min(1).max(80), z.string().min(1).max(80)).default({}),
  })
  .meta({ id: 'MessagingSettings' });
export type MessagingSettings = z.infer<typeof MessagingSettings>;
