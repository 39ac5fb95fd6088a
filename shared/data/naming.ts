import type { ConnectorNaming } from '../connections/connector';

/** The data connector's names, which its definition and each of its capabilities carry. */
export const dataNaming: ConnectorNaming = { name: 'data', platform: 'data platform' };
