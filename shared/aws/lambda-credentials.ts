import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * Stands in for `@aws-sdk/credential-provider-node` in the Lambda bundles (lib/bundling.ts aliases
 * it here). Lambda hands every function its role's credentials in the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which is the first place the
 * SDK's default chain looks and the only one it ever reaches in Lambda. The rest of that chain (SSO,
 * web identity, profiles, the instance metadata service, an STS client to assume roles) is ~95 KB
 * of every bundle that Lambda never runs. Locally (tsx, tests) the real chain is used: no alias.
 */
export const defaultProvider = (init?: Parameters<typeof fromEnv>[0]) => fromEnv(init);
