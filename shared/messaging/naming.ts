import type { ConnectorNaming } from '../connections/connector';

/** The messaging connector's names, which its definition and each of its capabilities carry. */
export const messagingNaming: ConnectorNaming = { name: 'messaging', platform: 'messaging platform' };
