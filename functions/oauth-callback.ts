import { authorizerAt } from '../shared/connections/registry';
import { gateway, provideAwsServices } from '../shared/gateway';
import { signedTable } from '../shared/store/signed-table-client';
import { httpFunction } from '../shared/handler/http-function';
import { checkSettingsAtLoad } from '../shared/handler/settings-check';
import { finishAuthorization, refusalPage } from '../shared/identity/authorization-callback';
import { log } from '../shared/log/logger';
import { signedKmsVault } from '../shared/vault/signed-kms-calls';

provideAwsServices({ table: signedTable, vault: signedKmsVault });
checkSettingsAtLoad('oauth-callback');

/**
 * `/auth/crmmessaging/callback` and `/auth/crmdata/callback`: the browser's return from the
 * platform's sign-in. The connector is the one whose callback this path is (the registry says).
 * Its answers are pages for a person (refusalPage), so failures are caught here rather than
 * turned into problem+json.
 */
export const handler = httpFunction(async (request) => {
  // The query holds the code and state: only the route is logged.
  const requestLog = log.with({ route: request.path });
  const connector = authorizerAt(request.path);
  if (!connector) return refusalPage(404, 'Unknown callback address', 'This address is not an OAuth callback of the gateway.', '/');
  try {
    return await finishAuthorization(gateway(), request, connector, requestLog);
  } catch (error) {
    requestLog.error('authorization callback failed', { error });
    return refusalPage(500, 'The sign-in could not be finished', 'Something went wrong on the gateway; nothing was saved. Start Connect Account again in a moment.', gateway().env.DASHBOARD_URL ?? '/');
  }
});
