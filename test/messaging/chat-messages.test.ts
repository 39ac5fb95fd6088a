import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHAT_MESSAGE_TYPES, chatMessage, endReasonOf } from '../../shared/messaging/chat-messages';
import { DOCUMENTED_EXAMPLES, DOCUMENTED_FIELDS } from './chat-vocabulary';

/** The gateway's reading of the documented long-poll vocabulary: pure, no servers. */

const AT = '2026-11-27T10:00:00.000Z';
const read = (type: keyof typeof DOCUMENTED_EXAMPLES) => chatMessage({ type, message: { ...DOCUMENTED_EXAMPLES[type] } }, AT);

describe('the documented chat vocabulary', () => {
  it('knows every documented type it gives a meaning to (and they are documented)', () => {
    for (const type of CHAT_MESSAGE_TYPES) if (type !== 'RichMessage') expect(Object.keys(DOCUMENTED_FIELDS)).toContain(type);
  });

  it('reads ChatMessage as the agent text, with the display name and agent id', () => {
    expect(read('ChatMessage')).toEqual({
      direction: 'inbound',
      type: 'text',
      text: 'Hello, how can I help?',
      sender: 'agent',
      sentAt: AT,
      details: { senderName: 'Andy L.', agentId: '005B0000000F3b2' },
    });
  });

  it('reads ChatEstablished as the agent joining (the conversation goes active with the name)', () => {
    expect(read('ChatEstablished')).toMatchObject({ type: 'system', lifecycle: 'agent_joined', text: 'Andy L.', details: { systemEvent: 'agent_joined', senderName: 'Andy L.', agentId: '005B0000000F3b2' } });
  });

  it('reads ChatTransferred as the new agent taking over', () => {
    expect(read('ChatTransferred')).toMatchObject({ type: 'system', lifecycle: 'agent_joined', text: 'Bea M.', details: { systemEvent: 'transfer', senderName: 'Bea M.', agentId: '005B0000000F3c9' } });
  });

  it('keeps queue position and estimated wait from ChatRequestSuccess and QueueUpdate', () => {
    expect(read('ChatRequestSuccess')).toMatchObject({ lifecycle: 'queued', details: { systemEvent: 'queue_update', position: 2, estimatedWaitSeconds: 120 } });
    expect(read('QueueUpdate')).toMatchObject({ lifecycle: 'queued', details: { systemEvent: 'queue_update', position: 1, estimatedWaitSeconds: 45 } });
    // Without the (optional) estimated wait, nothing is made up.
    expect(chatMessage({ type: 'QueueUpdate', message: { position: 3 } }, AT)?.details).toEqual({ systemEvent: 'queue_update', position: 3 });
  });

  it('ends the start on ChatRequestFail with its reason; ChatEnded ends the conversation', () => {
    const failed = read('ChatRequestFail');
    expect(failed).toMatchObject({ lifecycle: 'ended', text: 'Unavailable', details: { systemEvent: 'request_failed', reason: 'Unavailable' } });
    expect(endReasonOf(failed?.details)).toBe('failed');
    const ended = read('ChatEnded');
    expect(ended).toMatchObject({ lifecycle: 'ended', text: 'agent', details: { systemEvent: 'ended', reason: 'agent', attachedRecords: ['500B0000003wMgd'] } });
    expect(endReasonOf(ended?.details)).toBe('agent');
    expect(endReasonOf({ reason: 'client' })).toBe('end_user');
    expect(endReasonOf({ reason: 'something else' })).toBe('system');
    expect(endReasonOf(undefined)).toBe('system');
  });

  it('treats typing indicators as state: nothing stored', () => {
    expect(read('AgentTyping')).toBeUndefined();
    expect(read('AgentNotTyping')).toBeUndefined();
  });

  it('stores the other documented events as system events with their words', () => {
    expect(read('AgentDisconnect')).toMatchObject({ type: 'system', details: { systemEvent: 'agent_disconnect' } });
    expect(read('ChasitorIdleTimeoutWarningEvent')).toMatchObject({ text: 'triggered', details: { systemEvent: 'idle_timeout_warning', warning: 'triggered' } });
    expect(read('FileTransfer')).toMatchObject({ text: 'Requested', details: { systemEvent: 'file_transfer', payload: { type: 'Requested' } } });
    expect(read('CustomEvent')).toMatchObject({ text: 'rated 5', details: { systemEvent: 'custom_event', payload: { type: 'survey', data: 'rated 5' } } });
    const rich = { type: 'ChatWindowMenu', items: [{ text: 'Billing' }, { text: 'Support' }] };
    expect(chatMessage({ type: 'RichMessage', message: rich }, AT)).toMatchObject({ type: 'system', details: { systemEvent: 'rich_message', payload: rich } });
    for (const type of ['ChatMessage', 'ChatEstablished', 'QueueUpdate', 'ChatEnded'] as const) expect(read(type)?.sentAt).toBe(AT);
  });

  it('never reduces an unknown type to its name: the whole payload is kept, and its text is the text (property)', () => {
    const known = new Set<string>(CHAT_MESSAGE_TYPES);
    const payload = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }).filter((key) => key !== 'text'), fc.jsonValue(), { maxKeys: 6 });
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Z][A-Za-z]{0,30}$/).filter((t) => !known.has(t)), payload, fc.option(fc.string(), { nil: undefined }), (type, body, words) => {
        const message = words === undefined ? body : { ...body, text: words };
        const stored = chatMessage({ type, message }, AT);
        expect(stored).toMatchObject({ type: 'system', sender: 'system', details: { platformType: type, payload: message } });
        expect(stored?.text).toBe(words);
      }),
    );
  });
});
