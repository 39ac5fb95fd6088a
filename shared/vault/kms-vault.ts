import { KMSClient } from '@aws-sdk/client-kms';
import type { GatewayEnvironment } from '../config';
import { tracedAwsClient } from '../tracing/segments';
import { KmsDataKeySource } from './kms-data-key-source';
import { Vault } from './vault';

/**
 * The vault over KMS, for `provideAwsServices({ vault: kmsVault })`: only the functions that seal or
 * open credentials (those whose settings include CREDENTIALS_KEY_ID) bundle the KMS client.
 */
export function kmsVault(env: GatewayEnvironment): Vault {
  return new Vault({
    // Making a client opens no connection: a delivery served from the warm cache makes no KMS call.
    keySource: new KmsDataKeySource({ client: tracedAwsClient(new KMSClient({})), keyId: env.CREDENTIALS_KEY_ID ?? 'CREDENTIALS_KEY_ID-not-set' }),
    cacheTtlSeconds: env.VAULT_CACHE_TTL_SECONDS,
  });
}
