import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleHandler } from '../../lib/bundling';
import { functionSettings, handlerNames } from '../../shared/handler/function-settings';

/**
 * Each function bundles the AWS calls it makes and no other (docs/cold-starts.md): KMS only where
 * credentials are sealed or opened, which is where the stack sets CREDENTIALS_KEY_ID; and no SDK
 * client anywhere (signed calls, shared/aws/signed-call.ts).
 */
describe('what each function bundles', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-contents-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // Each function is built once, as the stack builds it, and read by every check below.
  const built = new Map<string, ReturnType<typeof bundleHandler>>();
  const bundleOf = (name: string) => built.get(name) ?? built.set(name, bundleHandler(name, join(dir, `${name}.mjs`))).get(name)!;

  it('KMS goes only into the functions that open credentials; no function bundles an SDK client', async () => {
    const found: Record<string, { kms: boolean; opensCredentials: boolean; sdkClients: string[] }> = {};
    for (const name of handlerNames) {
      const { inputs } = await bundleOf(name);
      const present = (part: string) => Object.entries(inputs).some(([path, input]) => path.includes(part) && input.bytesInOutput > 0);
      const sdkClients = [...new Set(Object.keys(inputs).flatMap((path) => /@aws-sdk\/(client-[\w-]+)\//.exec(path)?.[1] ?? []))];
      found[name] = { kms: present('shared/vault/signed-kms-calls.ts'), opensCredentials: functionSettings[name].includes('CREDENTIALS_KEY_ID'), sdkClients };
    }
    for (const [name, { kms, opensCredentials }] of Object.entries(found)) expect(kms, name).toBe(opensCredentials);
    // No function bundles an SDK client: every AWS call is signed (the local runtime and the tests use the SDK's).
    for (const name of handlerNames) expect(found[name]!.sdkClients, name).toEqual([]);
    // Built-ins come through require (shared/aws/builtins/): as ES modules Node reads all their exports at load.
    // Left as ES imports: node:module (the banner's createRequire) and node:zlib (read as a namespace).
    for (const name of handlerNames) {
      const esImports = [...readFileSync(join(dir, `${name}.mjs`), 'utf8').matchAll(/\bfrom\s*["']((?:node:)?[\w/]+)["']/g)].map((m) => m[1]!);
      expect(new Set(esImports.filter((from) => from !== 'module' && from !== 'node:module' && from !== 'node:zlib')), name).toEqual(new Set());
      expect(esImports, name).toContain('module');
    }
    // Both kinds exist, so the check above compares something.
    expect(Object.values(found).filter((f) => f.kms).length).toBeGreaterThan(0);
    expect(Object.values(found).filter((f) => !f.kms).length).toBeGreaterThan(0);
  }, 120_000);

  it('only the API bundles full connectors; every other function bundles the capabilities it runs', async () => {
    const CONNECTORS = ['payment', 'billing', 'data', 'messaging'];
    const bundled: Record<string, { definitions: string[]; folders: string[] }> = {};
    for (const name of handlerNames) {
      const { inputs } = await bundleOf(name);
      const kept = Object.entries(inputs).filter(([, input]) => input.bytesInOutput > 0).map(([path]) => path);
      bundled[name] = {
        // A connector's definition and its own API routes: what only the API runs.
        definitions: kept.filter((path) => /shared\/(payment|billing|data|messaging)\/(connector|routes)\.ts$/.test(path)),
        folders: CONNECTORS.filter((connector) => kept.some((path) => path.startsWith(`shared/${connector}/`))),
      };
    }
    expect(bundled.api!.definitions.length).toBeGreaterThan(0);
    for (const name of handlerNames.filter((n) => n !== 'api')) expect(bundled[name]!.definitions, name).toEqual([]);
    // Only the connectors with that capability: the receiver runs the two whose platforms send
    // webhooks (the path picks the connector), and the OAuth callback the two that connect through the browser.
    expect(bundled['webhook-receiver']!.folders).toEqual(['payment', 'billing']);
    expect(bundled['oauth-callback']!.folders).toEqual(['data', 'messaging']);
  }, 120_000);

  it('each function bundles the store concerns it calls: a receiver keeps the connections, not leases or synced records', async () => {
    const concernsOf = async (name: string) => {
      const { inputs } = await bundleOf(name);
      return Object.entries(inputs)
        .filter(([path, input]) => /shared\/store\/[\w-]+\.ts$/.test(path) && input.bytesInOutput > 0)
        .map(([path]) => /shared\/store\/([\w-]+)\.ts$/.exec(path)![1]!);
    };
    const receiver = await concernsOf('webhook-receiver');
    expect(receiver).toContain('connections');
    // The store's functions, not a class's methods (docs/architecture.md#the-store-functions-over-the-table):
    // what only other functions call stays out.
    for (const concern of ['conversation-leases', 'conversations', 'synced-records', 'sync-checkpoints', 'pending-authorizations', 'api-keys']) expect(receiver, concern).not.toContain(concern);
    expect(await concernsOf('poller-fleet-plan')).not.toContain('synced-records');
    expect(await concernsOf('sync-job')).toEqual(expect.arrayContaining(['synced-records', 'sync-checkpoints']));
  }, 120_000);

  it('every function bundles zod/mini, not classic zod, with its English messages', async () => {
    for (const name of handlerNames) {
      const { inputs } = await bundleOf(name);
      const kept = Object.entries(inputs).filter(([, input]) => input.bytesInOutput > 0).map(([path]) => path);
      // Classic zod (node_modules/zod/v4/classic) is ~70 KB more per function; one classic schema would bring it back.
      expect(kept.filter((path) => path.includes('zod/v4/classic/')), name).toEqual([]);
      expect(kept.some((path) => path.includes('zod/v4/mini/')), name).toBe(true);
      // zod/mini leaves messages to a locale; the engine sets English (shared/handler/engine.ts), and only English.
      expect(kept.filter((path) => path.includes('zod/v4/locales/')).map((path) => path.replace(/.*locales\//, '')), name).toEqual(['en.js']);
    }
  }, 120_000);

  it('an unminified bundle (the benchmarks count its schemas) is valid JavaScript beside the banner', async () => {
    const file = join(dir, 'sync-job.plain.mjs');
    await bundleHandler('sync-job', file, { minify: false });
    expect(() => execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' })).not.toThrow();
  }, 60_000);

  it('outside the API, the history schemas load with the first history read, not with the function', async () => {
    const HISTORY_SCHEMAS = 'shared/history/history-schemas.ts';
    const loadedBy = async (name: string) => {
      const { imports } = await bundleOf(name);
      const importers = Object.entries(imports).flatMap(([from, list]) => list.filter((i) => i.path.endsWith(HISTORY_SCHEMAS)).map((i) => ({ from, kind: i.kind })));
      return { atLoad: importers.filter((i) => i.kind !== 'dynamic-import').map((i) => i.from), onRead: importers.filter((i) => i.kind === 'dynamic-import').map((i) => i.from) };
    };
    for (const name of ['webhook-receiver', 'sync-job'] as const) {
      const { atLoad, onRead } = await loadedBy(name);
      expect(atLoad, name).toEqual([]);
      expect(onRead, name).toEqual([expect.stringMatching(/shared\/history\/history-store\.ts$/)]);
    }
    // The API routes history reads, so it builds them when it loads.
    expect((await loadedBy('api')).atLoad).toContainEqual(expect.stringMatching(/shared\/history\/history-routes\.ts$/));
  }, 120_000);
});
