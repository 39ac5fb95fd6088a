import { billing } from '../billing/connector';
import { messaging } from '../messaging/connector';
import { data } from '../data/connector';
import { payment } from '../payment/connector';
import { ConnectorRegistry } from './connector-registry';

/** The connectors this gateway offers: one line each. The core reads them from here only. */
export const connectors = new ConnectorRegistry([payment, billing, data, messaging]);
