import * as z from 'zod/mini';
import { formField } from '../connections/form-fields';
import { CONVERSATION_TRANSPORTS } from './conversation-transport';
import { LOOPBACK_HOST } from '../http/loopback';

/**
 * The Messaging API lives at the deployment's messaging URL (SCRT), which the API reference says to
 * take from the custom client deployment's code snippet, "for example,
 * https://mycompanyname.salesforce-scrt.com" (docs/conversations-sse.md, the wire contract). Only
 * https hosts under salesforce-scrt.com are called, so the address a user types cannot send
 * conversations (the end user's pre-chat details, the messages) anywhere else. Loopback stands for
 * the local simulator.
 */
export function isMessagingApiAddress(text: string): boolean {
  const url = URL.parse(text);
  if (!url || url.username || url.password || url.search || url.hash) return false;
  if (LOOPBACK_HOST.test(url.host)) return true;
  return url.protocol === 'https:' && /(^|\.)salesforce-scrt\.com$/i.test(url.hostname);
}

/** A custom field of the MessagingSession object (the CRM's API names end in `__c`). */
export const SessionFieldName = z
  .string()
  .check(
    z.regex(/^[A-Za-z][A-Za-z0-9_]{0,36}__c$/, 'a custom field API name such as Transcript__c'),
    z.describe('A custom field of MessagingSession, e.g. Transcript__c'),
  );

/** One pre-chat field: which profile attribute fills it, where the platform stores it, whether the agent sees it. */
export const PrechatField = z.strictObject({
  /** The gateway profile attribute whose value fills this pre-chat field (e.g. `email`). */
  attribute: z
    .string()
    .check(z.regex(/^[A-Za-z][A-Za-z0-9_.]{0,79}$/, 'a profile attribute name: letters, digits, _ or .'), z.meta(formField.text('Gateway profile attribute'))),
  /** MessagingSession fields where the platform stores the value (the spec's transcriptFields). */
  transcriptFields: z._default(z.array(SessionFieldName).check(z.maxLength(10)), []).check(z.meta(formField.text('Transcript fields'))),
  /** Whether the agent sees the value (the spec's displayToAgent). */
  displayToAgent: z._default(z.boolean(), true).check(z.meta(formField.text('Display to agent'))),
});
export type PrechatField = z.infer<typeof PrechatField>;

/** Messaging sync settings, as the spec's Sync settings table lists them, plus the license's cap. */
export const MessagingSettings = z
  .strictObject({
    /** Inbound only (the end user starts), Outbound only (proactive invitations), or Both. */
    direction: z
      ._default(z.enum(['inbound', 'outbound', 'both']), 'both')
      .check(z.meta(formField.choice('Conversation direction', { inbound: 'Inbound only', outbound: 'Outbound only', both: 'Both' }))),
    /** Which message types are stored and published. */
    messageTypes: z
      ._default(
        z.array(z.enum(['text', 'media', 'system_events'])).check(
          z.minLength(1, 'Choose at least one message type.'),
          z.refine((types) => new Set(types).size === types.length, 'Each message type once.'),
        ),
        ['text', 'media', 'system_events'],
      )
      .check(z.meta(formField.choice('Message types', { text: 'Text', media: 'Media', system_events: 'System events' }))),
    /** Whether ended conversations' transcripts are assembled and stored. */
    transcriptStorage: z
      ._default(z.enum(['enabled', 'disabled']), 'enabled')
      .check(z.meta(formField.choice('Transcript storage', { enabled: 'Enabled', disabled: 'Disabled' }))),
    /** The MessagingSession long-text field the transcript is written to (spec: transcript field mapping). */
    transcriptField: z._default(SessionFieldName, 'Transcript__c').check(z.meta(formField.text('Transcript field (a long text area of MessagingSession)'))),
    /** Pre-chat fields by label: the profile attribute that fills each, its transcript fields and agent visibility. */
    prechatMapping: z
      ._default(z.record(z.string().check(z.minLength(1), z.maxLength(80)), PrechatField), {})
      .check(z.meta({ title: 'Pre-chat mapping', 'x-entry-titles': { key: 'Pre-chat field label', value: 'Gateway profile attribute' } })),
    /** Live conversations at once for this account: the digital engagement license's limit (spec Limits). */
    maxConcurrentConversations: z
      ._default(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)), 100)
      .check(z.meta(formField.text('Concurrent conversations (the license limit)'))),
    /** The agent queue a handoff routes to when the playbook names none. */
    handoffQueue: z._default(z.string().check(z.minLength(1), z.maxLength(80)), 'Default').check(z.meta(formField.advanced('Handoff queue'))),
    /**
     * How conversations talk to the platform: the spec's long-poll chat API, or Messaging for In-App
     * and Web (the platform's current product: Server-Sent Events). A live conversation keeps the
     * transport it started on.
     */
    conversationTransport: z
      ._default(z.enum(CONVERSATION_TRANSPORTS), 'long_poll')
      .check(
        z.meta(
          formField.choice('Conversation transport', {
            long_poll: 'Long-poll chat API (the spec)',
            messaging_api: 'Messaging for In-App and Web (Server-Sent Events)',
          }),
        ),
      ),
    /** Messaging for In-App and Web: the 15-character org id the Messaging API takes (`orgId`, `X-Org-Id`). */
    messagingOrgId: z
      .optional(z.string().check(z.regex(/^00D[A-Za-z0-9]{12}$/, 'the 15-character org id, starting 00D')))
      .check(z.meta(formField.text('Org ID (Messaging for In-App and Web)'))),
    /** Messaging for In-App and Web: the embedded service deployment's API name (`esDeveloperName`). */
    deploymentDeveloperName: z
      .optional(z.string().check(z.regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, "the deployment's API name: letters, digits and _")))
      .check(z.meta(formField.text('Embedded service deployment API name'))),
    /** Messaging for In-App and Web: the deployment's messaging URL (SCRT), where the Messaging API and its event stream live. */
    messagingUrl: z.optional(z.url({ protocol: /^https?$/ })).check(z.meta(formField.text('Messaging URL (SCRT) of the deployment'))),
  })
  .check(
    z.superRefine((settings, context) => {
      if (settings.conversationTransport !== 'messaging_api') return;
      for (const field of ['messagingOrgId', 'deploymentDeveloperName', 'messagingUrl'] as const) {
        if (settings[field] === undefined)
          context.addIssue({
            code: 'custom',
            path: [field],
            message: "Messaging for In-App and Web needs the org ID, the deployment's API name and its messaging URL.",
          });
      }
      // Checked where it is used: a long-poll connection keeps reading settings that hold an unused address.
      if (settings.messagingUrl !== undefined && !isMessagingApiAddress(settings.messagingUrl)) {
        context.addIssue({
          code: 'custom',
          path: ['messagingUrl'],
          message: "the deployment's messaging URL from its code snippet: https://<your domain>.my.salesforce-scrt.com",
        });
      }
    }),
  )
  .register(z.globalRegistry, { id: 'MessagingSettings' });
export type MessagingSettings = z.infer<typeof MessagingSettings>;

/** Which message types a settings value lets through, by the stored message's type. */
export function keepsMessageType(settings: Pick<MessagingSettings, 'messageTypes'>, type: 'text' | 'media' | 'system'): boolean {
  return settings.messageTypes.includes(type === 'system' ? 'system_events' : type);
}
