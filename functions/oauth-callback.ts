import { notYetAvailable } from '../shared/api/not-yet-available';
import { httpFunction } from '../shared/handler/http-function';

/** /auth/crmmessaging/callback and /auth/crmdata/callback. Deployed and routed now; the work itself arrives with its connector's issue. */
export const handler = httpFunction(async () => notYetAvailable('The OAuth return for the messaging and data connectors'));
