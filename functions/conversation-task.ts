import * as z from 'zod';
import { taskFunction } from '../shared/handler/engine';

const ConversationTask = z.object({ step: z.enum(['start', 'await-end', 'transcript', 'mark-failed']) }).loose();

/**
 * The conversation lifecycle's steps (lib/conversations.ts). They arrive with the messaging
 * connector; until then a started lifecycle fails at its first step with this reason.
 */
export const handler = taskFunction(async (event: unknown): Promise<never> => {
  const { step } = ConversationTask.parse(event);
  throw new Error(`conversation step "${step}" is not available in this version of the gateway`);
});
