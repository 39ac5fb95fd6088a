import * as z from 'zod';
import { AccountId, ConnectorName } from '../../connectors';

export const AccountParams = z.object({ accountId: AccountId });
export const ConnectionParams = z.object({ accountId: AccountId, connector: ConnectorName });
