/**
 * Message bodies their senders wrote already. The webhook receiver has the platform's event as
 * JSON text it has just parsed (and verified): it writes that text into the message as sent,
 * rather than serialize the parsed copy again (for a 1-20 KB event, about as long as its HMAC).
 * Held on the message object itself, under a symbol, not enumerable: JSON and spread copies leave
 * it behind, so a copy (which may differ) is serialized anew, and the body cannot outlive the
 * message. (A WeakMap did the same at about a microsecond per message in a CPU profile of the warm
 * receiver, plus its weak entries' work in every garbage collection.)
 */
const WRITTEN = Symbol('written body');

/** Attaches the JSON of `message`, written by its sender; `JSON.parse(body)` must equal the message. */
export function withBody<T extends object>(message: T, body: string): T {
  Object.defineProperty(message, WRITTEN, { value: body });
  return message;
}

/** The body a queue sends for a message: the one its sender wrote, or the message serialized. */
export function messageBody(message: unknown): string {
  return (typeof message === 'object' && message !== null && (message as { [WRITTEN]?: string })[WRITTEN]) || JSON.stringify(message);
}
