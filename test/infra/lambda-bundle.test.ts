import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleHandler } from '../../lib/bundling';
import { startDynamo, type LocalDynamo } from '../support/dynamo';

const run = promisify(execFile);

/**
 * A handler bundled exactly as the stack bundles it (SDK credentials aliased to the environment
 * provider) runs in a fresh Node 24 process as Lambda would start it: settings checked at load,
 * credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, DynamoDB reached (dynalite here).
 */
describe('a Lambda bundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bundle-'));
  let dynamo: LocalDynamo;
  let bundle: string;
  beforeAll(async () => {
    dynamo = await startDynamo('bundle-test');
    bundle = join(dir, 'sync-dispatcher.mjs');
    await bundleHandler('sync-dispatcher', bundle);
  });
  afterAll(async () => {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const lambdaEnv = (extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? '',
    AWS_LAMBDA_FUNCTION_NAME: 'IntegrationGateway-SyncDispatcher',
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    TABLE_NAME: dynamo.tableName,
    SYNC_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/111122223333/sync-jobs.fifo',
    ...extra,
  });
  const invoke = (env: Record<string, string>) =>
    run(process.execPath, ['--input-type=module', '-e', `const { handler } = await import(${JSON.stringify(bundle)}); console.log(JSON.stringify(await handler({ frequency: 'hourly' })));`], { env });

  it('signs its calls with the credentials Lambda puts in the environment', async () => {
    const { stdout } = await invoke(lambdaEnv({ AWS_ACCESS_KEY_ID: 'AKIDLAMBDA', AWS_SECRET_ACCESS_KEY: 'lambda-secret', AWS_SESSION_TOKEN: 'session' }));
    // No connection is due: the dispatcher queried the table (a signed call) and sent nothing.
    expect(stdout).toContain('{"frequency":"hourly","enqueued":0}');
  });

  it('with no credentials in the environment it fails saying so (the chain is that one provider)', async () => {
    const failed = await invoke(lambdaEnv({})).then(
      () => undefined,
      (error: { stderr: string; stdout: string }) => error,
    );
    expect(failed?.stderr ?? '').toMatch(/environment variable credentials/);
  });

  it('stops at load, naming each setting that is missing or wrong', async () => {
    const failed = await invoke(lambdaEnv({ AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'x', SYNC_QUEUE_URL: '', BILLING_BASE_URL_TEMPLATE: 'https://billing.example.com' })).then(
      () => undefined,
      (error: { stderr: string; stdout: string }) => error,
    );
    const output = `${failed?.stdout ?? ''}${failed?.stderr ?? ''}`;
    expect(output).toContain('SYNC_QUEUE_URL: is not set');
    expect(output).toContain('BILLING_BASE_URL_TEMPLATE: must contain {site}');
  });
});
