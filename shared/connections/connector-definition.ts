import type * as z from 'zod/mini';

/** What Connect Account stores for a connector: non-secret config, and secrets for the vault. */
export interface ConnectionParts {
  config: Record<string, string | boolean | number>;
  /** Only these go through the vault; they are never stored, logged or returned in plain text. */
  credentials: Record<string, string>;
  /** Things that are allowed but probably wrong (a live key on a test site...), shown to the user. */
  warnings: string[];
}

/** How a connection proves who it is to the platform (the spec's Authentication section). */
export type AuthenticationMethod = 'api_key' | 'jwt_bearer' | 'authorization_code';

/** One connector's Connect Account form: its schema (the dashboard and OpenAPI use it) and how to split it. */
export interface ConnectionForm<S extends z.core.$ZodType = z.core.$ZodType> {
  /** The methods the form offers, the preferred first; the form's `authenticationMethod` picks one. */
  methods: readonly AuthenticationMethod[];
  input: S;
  /** `kept`: the `keptOnReconnect` credentials of the connection being replaced, if any. */
  split(input: z.infer<S>, kept: Readonly<Record<string, string>>): ConnectionParts;
  /**
   * Credentials the gateway generated itself (not typed into the form), kept when the user
   * reconnects with a new key: e.g. the billing webhook's Basic credentials already entered on
   * the platform. Their config and masked copies, under the same names, are kept too.
   */
  keptOnReconnect?: readonly string[];
}

/** Shows a secret's last four characters only, as the dashboard displays stored keys. */
export function maskSecret(secret: string): string {
  return secret.length >= 12 ? `••••${secret.slice(-4)}` : '••••';
}
