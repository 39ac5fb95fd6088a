import type { ConnectorName } from '../connectors';
import { billingPlatform } from '../billing/platform';
import { paymentPlatform } from '../payment/platform';
import type { ConnectorPlatform } from './connector-platform';

/** Connectors with a platform side (client, Test Connection, syncs). Messaging and data arrive with their issues. */
export const connectorPlatforms: Partial<Record<ConnectorName, ConnectorPlatform>> = {
  billing: billingPlatform,
  payment: paymentPlatform,
};
