import type { ConnectorName } from '../connectors';
import { billingConnector } from '../billing/config';
import { paymentConnector } from '../payment/config';
import type { ConnectorDefinition } from './connector-definition';

/**
 * Connectors whose Connect Account form is available. The messaging and data connectors connect
 * through OAuth and arrive with their own issues; until then the API says so (501).
 */
export const connectorDefinitions: Partial<Record<ConnectorName, ConnectorDefinition>> = {
  billing: billingConnector,
  payment: paymentConnector,
};
