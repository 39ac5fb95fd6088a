import type { ConnectorName } from '../connectors';
import { billingConnector } from '../billing/config';
import { dataConnector } from '../data/config';
import { paymentConnector } from '../payment/config';
import type { ConnectorDefinition } from './connector-definition';

/**
 * Connectors whose Connect Account form is available. The data connector connects by JWT bearer
 * with the form's private key (no browser redirect); the messaging connector arrives with its
 * own issue, and until then the API says so (501).
 */
export const connectorDefinitions: Partial<Record<ConnectorName, ConnectorDefinition>> = {
  billing: billingConnector,
  data: dataConnector,
  payment: paymentConnector,
};
