import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDataFolder } from '../../local/data-folder';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' });

/**
 * `npm start`'s data folder holds the vault's key, the sign-in key and the sandbox's private keys.
 * Secrets never go into a commit: the folder ignores itself, whatever LOCAL_DATA_DIR names it, and
 * no tracked file of this repository is one of those keys.
 */
describe('the local data folder', () => {
  const folders: string[] = [];
  afterEach(() => {
    for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('is ignored by git wherever it is put inside a checkout, with everything in it', () => {
    const repo = mkdtempSync(join(tmpdir(), 'gateway-data-folder-'));
    folders.push(repo);
    git(repo, 'init', '-q');
    const dataDir = join(repo, '.t29local');
    openDataFolder(dataDir);
    openDataFolder(dataDir); // a second start keeps it as it is
    writeFileSync(join(dataDir, 'vault.key'), 'not a real key');
    writeFileSync(join(repo, 'kept.txt'), 'tracked');
    git(repo, 'add', '-A');
    expect(git(repo, 'ls-files').split('\n').filter(Boolean)).toEqual(['kept.txt']);
  });

  it('no tracked file of this repository is a local key or a private key', () => {
    const root = join(import.meta.dirname, '..', '..');
    const keyNames = git(root, 'ls-files', '--', '*vault.key', '*sign-in.key', '*sandbox-keys.json', '*.pem').split('\n').filter(Boolean);
    expect(keyNames).toEqual([]);
    // A PEM private key's first line, alone on its line (tests name it only inside longer lines).
    let pems = '';
    try {
      pems = git(root, 'grep', '-lE', '^-----BEGIN ([A-Z]+ )?PRIVATE KEY-----$');
    } catch (error) {
      if ((error as { status?: number }).status !== 1) throw error; // 1: nothing found
    }
    expect(pems.split('\n').filter(Boolean)).toEqual([]);
  });
});
