import type { ConnectorNaming } from '../connections/connector';

/** The billing connector's names, which its definition and each of its capabilities carry. */
export const billingNaming: ConnectorNaming = { name: 'billing', platform: 'billing platform' };
