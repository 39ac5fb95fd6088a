import * as z from 'zod/mini';
import type { Message, SentMessage } from '../store/items';

// Built on first use (z.lazy): most functions load this module, through the connector registry, and never parse these.
/**
 * One conversation as a reader sees it: both sides and the system events, oldest first. The
 * same list answers "read its messages" and becomes the transcript.
 */
export const ConversationEntry = z.lazy(() =>
  z
    .object({
      /** `r<sequence>` for what the platform delivered, `s<id>` for what the gateway sent. */
      id: z.string(),
      direction: z.enum(['inbound', 'outbound']),
      type: z.enum(['text', 'media', 'system']),
      /** agent, system (platform side); automated, end_user (sent through the gateway). */
      sender: z.string(),
      senderName: z.optional(z.string()),
      text: z.optional(z.string()),
      media: z.optional(z.object({ url: z.string(), mimeType: z.string(), name: z.optional(z.string()) })),
      systemEvent: z.optional(z.string()),
      sequence: z.optional(z.number().check(z.int())),
      at: z.string(),
    })
    .register(z.globalRegistry, { id: 'ConversationEntry' }),
);
export type ConversationEntry = z.infer<typeof ConversationEntry>;

const MediaDetails = z.lazy(() => z.object({ url: z.string(), mimeType: z.string(), name: z.optional(z.string()) }));

export function receivedEntry(message: Message): ConversationEntry {
  const media = MediaDetails.safeParse(message.details?.media);
  const systemEvent = typeof message.details?.systemEvent === 'string' ? message.details.systemEvent : undefined;
  const senderName = typeof message.details?.senderName === 'string' ? message.details.senderName : undefined;
  return {
    id: `r${message.sequence}`,
    direction: 'inbound',
    type: message.type,
    sender: message.sender ?? (message.type === 'system' ? 'system' : 'agent'),
    ...(senderName ? { senderName } : {}),
    ...(message.text !== undefined ? { text: message.text } : {}),
    ...(media.success ? { media: media.data } : {}),
    ...(systemEvent ? { systemEvent } : {}),
    sequence: message.sequence,
    at: message.sentAt,
  };
}

export function sentEntry(message: SentMessage): ConversationEntry {
  const media = MediaDetails.safeParse(message.details?.media);
  return {
    id: `s${message.messageId}`,
    direction: 'outbound',
    type: message.type,
    sender: message.author,
    ...(message.text !== undefined ? { text: message.text } : {}),
    ...(media.success ? { media: media.data } : {}),
    at: message.sentAt,
  };
}

/** Pure: both sides merged in chronological order (a platform's own order breaks ties on its side). */
export function chronological(received: readonly Message[], sent: readonly SentMessage[]): ConversationEntry[] {
  const entries = [...received.map(receivedEntry), ...sent.filter((m) => m.status === 'sent').map(sentEntry)];
  return entries.sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || (a.sequence ?? Infinity) - (b.sequence ?? Infinity) || a.id.localeCompare(b.id));
}

/** A long text area holds at most this many characters. */
export const SESSION_FIELD_LIMIT = 131_072;

function describe(entry: ConversationEntry): string {
  if (entry.type === 'system') {
    const what = entry.systemEvent ?? 'event';
    return `${what.replace(/_/g, ' ')}${entry.text ? `: ${entry.text}` : ''}`;
  }
  if (entry.type === 'media') return `[${entry.media?.mimeType ?? 'media'}] ${entry.media?.name ?? entry.media?.url ?? ''}`.trim();
  return entry.text ?? '';
}

const WHO: Record<string, string> = { agent: 'Agent', system: 'System', automated: 'Bot', end_user: 'Customer' };

/** Pure: the transcript text, one line per entry, oldest first, cut to the field's limit. */
export function formatTranscript(entries: readonly ConversationEntry[], limit = SESSION_FIELD_LIMIT): string {
  const lines: string[] = [];
  let length = 0;
  for (const [index, entry] of entries.entries()) {
    const who = `${WHO[entry.sender] ?? entry.sender}${entry.senderName ? ` (${entry.senderName})` : ''}`;
    const line = `[${entry.at}] ${who}: ${describe(entry)}`;
    const note = `[truncated: ${entries.length - index} more entries]`;
    if (length + line.length + 1 + note.length > limit) {
      lines.push(note);
      break;
    }
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}
