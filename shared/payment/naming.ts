import type { ConnectorNaming } from '../connections/connector';

/** The payment connector's names, which its definition and each of its capabilities carry. */
export const paymentNaming: ConnectorNaming = { name: 'payment', platform: 'payment platform' };
