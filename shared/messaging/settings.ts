import * as z from 'zod';
import { formField } from '../connections/form-fields';

/** Messaging sync settings, as the spec's Sync settings table lists them. */
export const MessagingSettings = z
  .strictObject({
    /** Inbound only (the end user starts), Outbound only (proactive invitations), or Both. */
    direction: z
      .enum(['inbound', 'outbound', 'both'])
      .default('both')
      .meta(formField.choice('Conversation direction', { inbound: 'Inbound only', outbound: 'Outbound only', both: 'Both' })),
    /** Which message types are stored and published. */
    messageTypes: z
      .array(z.enum(['text', 'media', 'system_events']))
      .min(1, 'Choose at least one message type.')
      .refine((types) => new Set(types).size === types.length, 'Each message type once.')
      .default(['text', 'media', 'system_events'])
      .meta(formField.choice('Message types', { text: 'Text', media: 'Media', system_events: 'System events' })),
    /** Whether ended conversations' transcripts are assembled and stored. */
    transcriptStorage: z.enum(['enabled', 'disabled']).default('enabled').meta(formField.choice('Transcript storage', { enabled: 'Enabled', disabled: 'Disabled' })),
    /** Pre-chat fields (by label) to the gateway's profile attributes. */
    prechatMapping: z
      .record(z.string().min(1).max(80), z.string().min(1).max(80))
      .default({})
      .meta({ title: 'Pre-chat mapping', 'x-entry-titles': { key: 'Pre-chat field label', value: 'Gateway profile attribute' } }),
  })
  .meta({ id: 'MessagingSettings' });
export type MessagingSettings = z.infer<typeof MessagingSettings>;
