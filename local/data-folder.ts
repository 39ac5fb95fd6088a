import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The local data folder (`LOCAL_DATA_DIR`, `.local` by default) holds the vault's key, the sign-in
 * key, the sandbox's private keys and the table: readable by this user only, and ignored by git
 * wherever it is put (its own `.gitignore` says `*`), so a folder named anything inside a checkout
 * is never committed with its keys.
 */
export function openDataFolder(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const ignore = join(dataDir, '.gitignore');
  if (!existsSync(ignore)) writeFileSync(ignore, '# Local keys and data: never committed.\n*\n');
}
