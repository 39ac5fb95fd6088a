import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { GatewayEnvironment } from '../config';
import { tracedAwsClient } from '../tracing/segments';
import { kmsVaultOver, type KmsCalls } from './kms-data-key-source';
import type { Vault } from './vault';

/** The vault's KMS actions through an SDK client (its retries, and X-Ray where the function traces). */
export function sdkKmsCalls(client: KMSClient): KmsCalls {
  return {
    generateDataKey: (input) => client.send(new GenerateDataKeyCommand(input)),
    decrypt: (input) => client.send(new DecryptCommand(input)),
  };
}

/**
 * The vault over KMS through the SDK, for `provideAwsServices({ vault: kmsVault })`: only the
 * functions that seal or open credentials (those whose settings include CREDENTIALS_KEY_ID) bundle
 * the KMS client.
 */
export function kmsVault(env: GatewayEnvironment): Vault {
  return kmsVaultOver(env, sdkKmsCalls(tracedAwsClient(new KMSClient({}))));
}
