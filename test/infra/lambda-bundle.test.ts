import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { createGatewayApp } from '../../lib/app';
import { bundleHandler } from '../../lib/bundling';
import { GatewayFunction, handlerNames } from '../../lib/gateway-function';
import { startDynamo, type LocalDynamo } from '../support/dynamo';

const run = promisify(execFile);

/**
 * A handler bundled exactly as the stack bundles it runs in a fresh Node 24 process as Lambda would
 * start it: settings checked at load, its calls signed with the credentials Lambda puts in the
 * environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN), DynamoDB reached (dynalite here).
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

  it('with no credentials in the environment it fails saying so (Lambda always sets them)', async () => {
    const failed = await invoke(lambdaEnv({})).then(
      () => undefined,
      (error: { stderr: string; stdout: string }) => error,
    );
    expect(failed?.stderr ?? '').toMatch(/AWS credentials are not in the environment \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\)/);
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

/**
 * The stack's own assets, bundled as `cdk deploy` bundles them (lib/gateway-function.ts): each
 * function gets its own handler's code, an entry `index.mjs` and the chunks it loads on first use.
 */
describe('the stack\'s function assets', () => {
  it('builds one asset a function, each its own handler\'s entry, the API\'s route areas in chunks of their own', () => {
    const { app, stack } = createGatewayApp({ context: { 'aws:cdk:bundling-stacks': ['**'] } });
    const assembly = app.synth();
    const functions = stack.node.findAll().filter((construct): construct is GatewayFunction => construct instanceof GatewayFunction);
    expect(functions.length).toBe(handlerNames.length);
    const template = Template.fromStack(stack).toJSON() as { Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string }; Handler?: string } }> };
    const assetOf = (fn: GatewayFunction) => template.Resources[stack.getLogicalId(fn.node.defaultChild as CfnFunction)]!.Properties;
    const keys = functions.map((fn) => assetOf(fn).Code!.S3Key!);
    // One asset a function: were two the same, one function would run the other's handler.
    expect(new Set(keys).size).toBe(functions.length);
    for (const fn of functions) {
      expect(assetOf(fn).Handler).toBe('index.handler');
      const dir = join(assembly.directory, `asset.${assetOf(fn).Code!.S3Key!.replace(/\.zip$/, '')}`);
      expect(existsSync(join(dir, 'index.mjs'))).toBe(true);
    }
    // The API's entry names its handler's file; its route areas are chunks it does not import at load.
    const api = functions.find((fn) => fn.handlerName === 'api')!;
    const apiDir = join(assembly.directory, `asset.${assetOf(api).Code!.S3Key!.replace(/\.zip$/, '')}`);
    const entry = readFileSync(join(apiDir, 'index.mjs'), 'utf8');
    const chunks = readdirSync(join(apiDir, 'chunks')).filter((file) => file.endsWith('.mjs'));
    const importedAtLoad = chunks.filter((chunk) => entry.includes(`from"./chunks/${chunk}"`) || entry.includes(`import"./chunks/${chunk}"`));
    expect(chunks.length - importedAtLoad.length).toBeGreaterThan(3);
  }, 120_000);
});
