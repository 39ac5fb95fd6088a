import { SECRETS_MANAGER, signedCall } from '../aws/signed-call';
import { gateway } from '../gateway';

/**
 * The value the distribution sends in its origin header, and the only thing that says a request came
 * through it. In AWS it lives in Secrets Manager (lib/origin-verification.ts makes it at deploy): the
 * distribution is given it by a dynamic reference CloudFormation resolves, and each HTTP function reads it
 * once per warm container. Locally the runtime, which plays the distribution, installs its own.
 */
export type OriginSecretSource = () => Promise<string>;

let installed: OriginSecretSource | undefined;
let fromSecretsManager: Promise<string> | undefined;
/** Secrets Manager's value once read: a warm function checks each request without awaiting it. */
let read: string | undefined;

/** The local runtime's (or a test's) source; `undefined` goes back to Secrets Manager. Returns the previous one. */
export function useOriginSecret(source: OriginSecretSource | undefined): OriginSecretSource | undefined {
  const previous = installed;
  installed = source;
  fromSecretsManager = undefined;
  read = undefined;
  return previous;
}

/** The expected header value: the installed source's, else Secrets Manager's, read once and kept. */
export function originSecret(): Promise<string> {
  if (installed) return installed();
  if (fromSecretsManager) return fromSecretsManager;
  const reading: Promise<string> = readSecret().then(
    (value) => {
      // Kept only if no other source was installed meanwhile.
      if (fromSecretsManager === reading) read = value;
      return value;
    },
    (error: unknown) => {
      // A failed read is not kept: the next request tries again.
      if (fromSecretsManager === reading) fromSecretsManager = undefined;
      throw error;
    },
  );
  fromSecretsManager = reading;
  return reading;
}

/** The expected value when it is already in hand (Secrets Manager's, read earlier), else undefined: ask `originSecret()`. */
export function heldOriginSecret(): string | undefined {
  return installed ? undefined : read;
}

/**
 * One GetSecretValue, as a signed call rather than through the SDK's client (shared/aws/signed-call.ts):
 * each HTTP function makes it once per container, and the client would be some 60 KB of its bundle.
 */
async function readSecret(): Promise<string> {
  const secretId = gateway().env.ORIGIN_SECRET_ARN;
  if (!secretId) throw new Error('ORIGIN_SECRET_ARN is not set for this function');
  const { SecretString } = await signedCall<{ SecretString?: string }>(SECRETS_MANAGER, 'GetSecretValue', { SecretId: secretId });
  if (!SecretString) throw new Error('the origin secret has no value');
  return SecretString;
}
