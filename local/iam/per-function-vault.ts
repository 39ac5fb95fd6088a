import type { Gateway } from '../../shared/gateway';
import type { Vault } from '../../shared/vault/vault';
import { runningFunction } from './enforcement';

/**
 * One vault per function, as each deployed function has its own memory: credentials the API just
 * sealed are not in a receiver's cache, so the receiver's KMS call (and its IAM check) happens
 * locally as it does in AWS. A forget reaches every function's vault (a reconnect is seen at once).
 */
export function perFunctionVault(make: () => Vault): Gateway['vault'] {
  const vaults = new Map<string, Vault>();
  const current = (): Vault => {
    const name = runningFunction() ?? '';
    let vault = vaults.get(name);
    if (!vault) vaults.set(name, (vault = make()));
    return vault;
  };
  return {
    seal: (scope, credentials, options) => current().seal(scope, credentials, options),
    open: (scope, sealed, options) => current().open(scope, sealed, options),
    forget: (scope) => {
      for (const vault of vaults.values()) vault.forget(scope);
    },
  };
}
