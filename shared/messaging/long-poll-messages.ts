import { chatMessage, endReasonOf, type ChatReading, type PolledChatEvent } from './chat-messages';

/**
 * Pure: the stored message for a polled event, read by the documented chat vocabulary
 * (./chat-messages.ts); undefined for typing indicators (state, not a message).
 */
export function messageOf(event: PolledChatEvent, fallbackAt: string): ChatReading | undefined {
  return chatMessage(event, fallbackAt);
}

export { endReasonOf };
