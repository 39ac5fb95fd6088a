import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../shared/api/openapi';
import { allApiRoutes } from '../../shared/api/routes/index';
import { tokenExpiresAt } from '../../shared/messaging/messaging-api-client';
import { eventMessage, transcriptEntries } from '../../shared/messaging/messaging-api-events';
import { MessagingSettings } from '../../shared/messaging/settings';

/** The Messaging API's vocabulary read into the gateway's messages (pure), and the transport setting. */

const CONVERSATION = '9f1c2a34-5b6d-4e7f-8a9b-0c1d2e3f4a5b';
const AT = '2026-11-27T22:00:00.000Z';

function sse(type: string, entry: Record<string, unknown>, conversationId = CONVERSATION) {
  return { event: type, id: '7', data: JSON.stringify({ channelType: 'embedded_messaging', conversationId, conversationEntry: { ...entry, entryPayload: JSON.stringify(entry.entryPayload ?? {}) } }) };
}

describe('Messaging API events', () => {
  it('reads an agent message with its sender role and display name, its text from the entry payload (a JSON string)', () => {
    const event = sse('CONVERSATION_MESSAGE', {
      identifier: 'e1',
      senderDisplayName: 'Ann',
      sender: { role: 'Agent' },
      transcriptedTimestamp: Date.parse(AT),
      entryPayload: { entryType: 'Message', abstractMessage: { messageType: 'StaticContentMessage', staticContent: { formatType: 'Text', text: 'Hi' } } },
    });
    expect(eventMessage(event, CONVERSATION, 'x')).toEqual({ direction: 'inbound', type: 'text', text: 'Hi', sender: 'agent', sentAt: AT, platformMessageId: 'e1', details: { senderName: 'Ann', senderRole: 'Agent' } });
  });

  it('stores nothing for the end user\'s own echo, typing indicators, or another conversation', () => {
    const echo = sse('CONVERSATION_MESSAGE', { sender: { role: 'EndUser' }, entryPayload: { abstractMessage: { staticContent: { text: 'me' } } } });
    expect(eventMessage(echo, CONVERSATION, AT)).toBeUndefined();
    expect(eventMessage(sse('CONVERSATION_TYPING_STARTED_INDICATOR', { sender: { role: 'Agent' } }), CONVERSATION, AT)).toBeUndefined();
    const other = sse('CONVERSATION_MESSAGE', { sender: { role: 'Agent' }, entryPayload: { abstractMessage: { staticContent: { text: 'x' } } } }, '00000000-0000-4000-8000-000000000000');
    expect(eventMessage(other, CONVERSATION, AT)).toBeUndefined();
  });

  it('reads joins, routing, the end (whoever ended it), acknowledgements kept whole', () => {
    const joined = eventMessage(sse('CONVERSATION_PARTICIPANT_CHANGED', { sender: { role: 'System' }, entryPayload: { entries: [{ operation: 'add', displayName: 'Bo', participant: { role: 'Agent' } }] } }), CONVERSATION, AT);
    expect(joined).toMatchObject({ lifecycle: 'agent_joined', text: 'Bo', details: { systemEvent: 'agent_joined', senderName: 'Bo' } });
    const left = eventMessage(sse('CONVERSATION_PARTICIPANT_CHANGED', { entryPayload: { entries: [{ operation: 'remove', displayName: 'Bo' }] } }), CONVERSATION, AT);
    expect(left?.lifecycle).toBeUndefined();
    expect(eventMessage(sse('CONVERSATION_ROUTING_RESULT', { entryPayload: { routingType: 'Initial', failureType: 'None' } }), CONVERSATION, AT)).toMatchObject({ lifecycle: 'queued' });
    expect(eventMessage(sse('CONVERSATION_SESSION_STATUS_CHANGED', { sender: { role: 'Agent' } }), CONVERSATION, AT)).toMatchObject({ lifecycle: 'ended', endedBy: 'agent' });
    expect(eventMessage(sse('CONVERSATION_SESSION_STATUS_CHANGED', { sender: { role: 'EndUser' } }), CONVERSATION, AT)).toMatchObject({ lifecycle: 'ended', endedBy: 'end_user' });
    expect(eventMessage(sse('CONVERSATION_CLOSE_CONVERSATION', {}), CONVERSATION, AT)).toMatchObject({ lifecycle: 'ended', endedBy: 'end_user' });
    const read = eventMessage(sse('CONVERSATION_READ_ACKNOWLEDGEMENT', { entryPayload: { acknowledgedConversationEntryIdentifier: 'e1' } }), CONVERSATION, AT);
    expect(read).toMatchObject({ type: 'system', details: { systemEvent: 'read_acknowledgement' } });
    expect(JSON.stringify(read?.details)).toContain('e1');
  });

  it('turns the platform\'s entries into a chronological transcript of both sides, without acknowledgements', () => {
    const entries = [
      { identifier: 'b', entryType: 'Message', sender: { role: 'EndUser' }, senderDisplayName: 'Guest', transcriptedTimestamp: 2000, entryPayload: JSON.stringify({ abstractMessage: { staticContent: { text: 'invoice?' } } }) },
      { identifier: 'a', entryType: 'Message', sender: { role: 'Agent' }, senderDisplayName: 'Ann', transcriptedTimestamp: 1000, entryPayload: JSON.stringify({ abstractMessage: { staticContent: { text: 'Hi' } } }) },
      { identifier: 'c', entryType: 'DeliveryAcknowledgement', sender: { role: 'System' }, transcriptedTimestamp: 3000, entryPayload: '{}' },
    ];
    expect(transcriptEntries(entries, AT).map((entry) => [entry.sender, entry.direction, entry.text])).toEqual([
      ['agent', 'inbound', 'Hi'],
      ['end_user', 'outbound', 'invoice?'],
    ]);
  });

  it('reads a JWT\'s expiry; anything else has none', () => {
    const token = `e30.${Buffer.from(JSON.stringify({ exp: 1_800_000_000 })).toString('base64url')}.sig`;
    expect(tokenExpiresAt(token)).toBe(1_800_000_000_000);
    expect(tokenExpiresAt('opaque')).toBeUndefined();
  });
});

describe('the conversation transport setting', () => {
  it('defaults to the spec\'s long-poll; Messaging for In-App and Web needs its org, deployment and messaging URL', () => {
    expect(MessagingSettings.parse({}).conversationTransport).toBe('long_poll');
    const missing = MessagingSettings.safeParse({ conversationTransport: 'messaging_api' });
    expect(missing.success).toBe(false);
    expect(missing.error?.issues.map((issue) => issue.path.join('.')).sort()).toEqual(['deploymentDeveloperName', 'messagingOrgId', 'messagingUrl']);
    expect(MessagingSettings.safeParse({ conversationTransport: 'messaging_api', messagingOrgId: '00D000000000001', deploymentDeveloperName: 'Web', messagingUrl: 'https://acme.my.salesforce-scrt.com' }).success).toBe(true);
    expect(MessagingSettings.safeParse({ conversationTransport: 'websocket' }).success).toBe(false);
  });

  it('calls the Messaging API only at an https host under salesforce-scrt.com, as its reference documents it (loopback for the simulator)', () => {
    const withUrl = (messagingUrl: string) =>
      MessagingSettings.safeParse({ conversationTransport: 'messaging_api', messagingOrgId: '00D000000000001', deploymentDeveloperName: 'Web', messagingUrl });
    for (const accepted of ['https://mycompanyname.salesforce-scrt.com', 'https://acme.my.salesforce-scrt.com', 'https://acme--uat.sandbox.my.salesforce-scrt.com/', 'http://127.0.0.1:4010', 'http://localhost:4010']) {
      expect(withUrl(accepted).success, accepted).toBe(true);
    }
    for (const refused of [
      'https://attacker.example',
      'https://salesforce-scrt.com.attacker.example',
      'https://acme.my.salesforce-scrt.com.evil.example',
      'https://acmesalesforce-scrt.com',
      'http://acme.my.salesforce-scrt.com',
      'https://user:secret@acme.my.salesforce-scrt.com',
      'https://acme.my.salesforce-scrt.com/?next=https://attacker.example',
      'ftp://acme.my.salesforce-scrt.com',
    ]) {
      const parsed = withUrl(refused);
      expect(parsed.success, refused).toBe(false);
      expect([...new Set(parsed.error?.issues.map((issue) => issue.path.join('.')))], refused).toEqual(['messagingUrl']);
    }
    // Settings on the long-poll transport are read as they are: an address they hold is never called.
    expect(MessagingSettings.safeParse({ conversationTransport: 'long_poll', messagingUrl: 'https://attacker.example' }).success).toBe(true);
  });

  it('is in the OpenAPI document with both choices', async () => {
    const document = JSON.stringify(openApiDocument(await allApiRoutes()));
    expect(document).toContain('"conversationTransport"');
    expect(document).toContain('Messaging for In-App and Web (Server-Sent Events)');
  });
});
