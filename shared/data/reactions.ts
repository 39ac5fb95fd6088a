import type { ReactingConnector } from '../connections/connector';
import { conversationEndedReaction } from './conversation-outcomes';
import { dataNaming } from './naming';

/** What functions that publish events run of the data connector: an ended conversation can become an engagement event. */
export const dataReacting: ReactingConnector = { ...dataNaming, reactions: { 'conversation.ended': conversationEndedReaction } };
