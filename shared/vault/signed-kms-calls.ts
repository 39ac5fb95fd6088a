import { KMS, signedCall } from '../aws/signed-call';
import type { GatewayEnvironment } from '../config';
import { kmsVaultOver, type KmsCalls } from './kms-data-key-source';
import type { Vault } from './vault';

/** KMS answers blobs as base64 text in its JSON protocol. */
const bytes = (base64: string | undefined) => (base64 === undefined ? undefined : Buffer.from(base64, 'base64'));

/** The vault's KMS actions as signed calls, without the SDK's client (shared/aws/signed-call.ts says why). */
export const signedKmsCalls: KmsCalls = {
  async generateDataKey(input) {
    const answer = await signedCall<{ Plaintext?: string; CiphertextBlob?: string }>(KMS, 'GenerateDataKey', input);
    return { Plaintext: bytes(answer.Plaintext), CiphertextBlob: bytes(answer.CiphertextBlob) };
  },
  async decrypt(input) {
    const answer = await signedCall<{ Plaintext?: string }>(KMS, 'Decrypt', input);
    return { Plaintext: bytes(answer.Plaintext) };
  },
};

/** The vault over KMS as signed calls, for the functions that open credentials: `provideAwsServices({ vault: signedKmsVault })`. */
export function signedKmsVault(env: GatewayEnvironment): Vault {
  return kmsVaultOver(env, signedKmsCalls);
}
