import { randomBytes } from 'node:crypto';
import { ORIGIN_HEADER } from '../shared/origin/origin-check';
import type { OriginSecretSource } from '../shared/origin/origin-secret';
import { iamEnforcement, type IamEnforcement } from './iam/enforcement';
import { localArns } from './iam/local-arns';
import type { OriginHeader } from './local-server';

/**
 * The local stand-in for the origin secret: a fresh random value per runtime (it lives in memory only:
 * nothing outside the process needs it), handed to the front, which plays the distribution, and read by the
 * HTTP functions as from Secrets Manager: each read is judged as GetSecretValue on the secret against the
 * running function's role, as AWS would judge it.
 */
export function localOriginSecret(enforcement: IamEnforcement = iamEnforcement): { header: OriginHeader; source: OriginSecretSource } {
  const value = randomBytes(32).toString('base64url');
  return {
    header: { name: ORIGIN_HEADER, value },
    source: async () => {
      enforcement.authorize({ action: 'secretsmanager:GetSecretValue', resource: localArns.originSecret });
      return value;
    },
  };
}
