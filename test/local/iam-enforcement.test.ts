import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessDeniedError, iamEnforcement, runAs } from '../../local/iam/enforcement';
import { localArns } from '../../local/iam/local-arns';
import type { Connection } from '../../shared/store/items';
import { openWebhookSecret } from '../../shared/webhooks/webhook-secret';
import { generatedKey, startTestGateway, type TestGateway } from '../support/local-runtime';
import { storeConnection } from '../support/stored-connection';
import * as store from '../../shared/store/store';

/**
 * The local runtime judges every AWS call a handler makes against its function's role as the
 * stack deploys it (local/iam/role-policies.json), and refuses what AWS would refuse.
 */
let world: TestGateway;
let connection: Connection;
const signingSecret = generatedKey('whsec_');

beforeAll(async () => {
  world = await startTestGateway();
  const gateway = world.runtime.local.gateway;
  await storeConnection(gateway, { accountId: 'acme', connector: 'payment', credentials: { secretKey: generatedKey('rk_test_'), webhookSigningSecret: signingSecret } });
  connection = (await store.getConnection(gateway.table, 'acme', 'payment'))!;
});
afterAll(() => world.stop());

const gateway = () => world.runtime.local.gateway;
/** Refused by IAM: the AccessDenied itself, or the vault's error caused by it. */
async function refused(work: Promise<unknown>): Promise<void> {
  const error = await work.then(() => undefined, (reason: unknown) => reason);
  const denial = error instanceof AccessDeniedError ? error : (error as { cause?: unknown } | undefined)?.cause;
  expect(denial).toBeInstanceOf(AccessDeniedError);
}

describe('IAM enforced locally', () => {
  it('a webhook receiver opens the webhook secret, and nothing else of the connection', async () => {
    gateway().vault.forget({ accountId: 'acme', connector: 'payment' });
    await expect(runAs('webhook-receiver', () => openWebhookSecret(gateway(), connection))).resolves.toEqual({ webhookSigningSecret: signingSecret });
    await refused(runAs('webhook-receiver', () => gateway().vault.open({ accountId: 'acme', connector: 'payment' }, connection.credentials)));
    // The other functions open the credentials, and never the webhook secret's envelope.
    await expect(runAs('sync-job', () => gateway().vault.open({ accountId: 'acme', connector: 'payment' }, connection.credentials))).resolves.toHaveProperty('secretKey');
    await refused(runAs('sync-job', () => gateway().vault.open({ accountId: 'acme', connector: 'payment', purpose: 'webhook' }, connection.webhookSecret!)));
  });

  it('refuses a call the role lacks, with the AccessDenied AWS answers', async () => {
    const denied = runAs('webhook-receiver', () => gateway().queues.syncJobs.send([{ accountId: 'acme', connector: 'payment', object: 'customers', trigger: 'manual', requestedAt: new Date().toISOString() }]));
    await expect(denied).rejects.toThrow(`not authorized to perform: sqs:SendMessage on resource: ${localArns.queues.syncJobs}`);
    // sync-job publishes nothing: its role has no events:PutEvents.
    await refused(runAs('sync-job', () => gateway().events.publish([])));
    // No role may scan the table.
    await refused(runAs('api', () => world.runtime.local.dynamo.client.send(new ScanCommand({ TableName: world.runtime.local.dynamo.tableName }))));
    // A read-only function cannot write.
    const at = new Date().toISOString();
    await refused(runAs('sync-dispatcher', () => store.putAccount(gateway().table, { accountId: 'mallory', name: 'm', integrationsEnabled: true, createdAt: at, updatedAt: at })));
    expect(await store.getAccount(gateway().table, 'mallory')).toBeUndefined();
  });

  it('allows what the role holds, and calls outside any function (a test seeding data) are not judged', async () => {
    const before = iamEnforcement.checked;
    await runAs('webhook-receiver', () => store.getConnection(gateway().table, 'acme', 'payment'));
    await runAs('api', () => gateway().queues.syncJobs.send([]));
    expect(iamEnforcement.checked).toBeGreaterThan(before);
    const seeded = iamEnforcement.checked;
    await store.getConnection(gateway().table, 'acme', 'payment');
    expect(iamEnforcement.checked).toBe(seeded);
  });

  it('the API may answer a conversation’s task token (the lifecycle’s SendTaskSuccess)', async () => {
    // An unknown token fails in the state machine, not at IAM.
    const answer = runAs('api', () => gateway().stateMachines.sendTaskSuccess('no-such-token', { reason: 'ended' }));
    await answer.catch((error: unknown) => expect(error).not.toBeInstanceOf(AccessDeniedError));
    await refused(runAs('sync-job', () => gateway().stateMachines.sendTaskSuccess('no-such-token', { reason: 'ended' })));
  });
});
