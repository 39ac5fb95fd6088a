/**
 * Message bodies their senders wrote already. The webhook receiver has the platform's event as
 * JSON text it has just parsed (and verified): it writes that text into the message as sent,
 * rather than serialize the parsed copy again (for a 1-20 KB event, about as long as its HMAC).
 * Keyed by the message object, so the body cannot outlive or drift from it.
 */
const writtenBodies = new WeakMap<object, string>();

/** Attaches the JSON of `message`, written by its sender; `JSON.parse(body)` must equal the message. */
export function withBody<T extends object>(message: T, body: string): T {
  writtenBodies.set(message, body);
  return message;
}

/** The body a queue sends for a message: the one its sender wrote, or the message serialized. */
export function messageBody(message: unknown): string {
  return (typeof message === 'object' && message !== null && writtenBodies.get(message)) || JSON.stringify(message);
}
