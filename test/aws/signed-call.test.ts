import { randomBytes } from 'node:crypto';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetItemCommand as SdkGetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Retry } from '@smithy/core/retry';
import { AwsCallError, KMS, SECRETS_MANAGER, SQS, retryBaseMs, retryDelayMs, signedCall } from '../../shared/aws/signed-call';
import { signedSqsCalls } from '../../shared/queues/signed-sqs-calls';
import { sdkKmsCalls, sdkSqsCalls } from '../support/sdk-calls';
import { sdkTableClient } from '../../shared/store/sdk-table-client';
import { signedTableClient } from '../../shared/store/signed-table-client';
import { GetItemCommand } from '../../shared/store/table-client';
import { batchGetAll, batchWriteAll, countAll, fromItem, putVersioned, queryAll, toItem, VersionConflictError } from '../../shared/store/table-access';
import { DeleteItemCommand } from '../../shared/store/table-client';
import { signedKmsCalls } from '../../shared/vault/signed-kms-calls';
import * as store from '../../shared/store/store';
import type { Table } from '../../shared/store/table-access';
import { localDynamoClient, startLocalDynamo, type LocalDynamo } from '../../local/local-dynamo';
import { useAwsStandIn } from '../support/use-aws-stand-in';

/**
 * The calls every function makes without the SDK (shared/aws/signed-call.ts), held to the SDK:
 * for the same input both send the same target, content type and JSON body, and read the same
 * answers. KMS, SQS and Secrets Manager answer from the loopback stand-in (which the SDK's own
 * clients talk to unchanged), DynamoDB from dynalite.
 */
const standIn = useAwsStandIn();

const sdk = <T>(Client: new (config: object) => T): T => new Client({ region: standIn().region, endpoint: standIn().url, credentials: standIn().credentials, maxAttempts: 1 });
const context = { account: 'acct-signed', connector: 'payment', purpose: 'webhook' };

/** The last request the stand-in received, as the protocol sees it. */
function lastRequest() {
  const request = standIn().requests().at(-1)!;
  return { target: request.target, contentType: request.contentType, body: request.body };
}

describe('the same request as the SDK sends', () => {
  it('KMS GenerateDataKey and Decrypt: target, content type and body (blobs as base64)', async () => {
    const input = { KeyId: standIn().keyId, KeySpec: 'AES_256' as const, EncryptionContext: context };
    await sdkKmsCalls(sdk(KMSClient)).generateDataKey(input);
    const bySdk = lastRequest();
    const made = await signedKmsCalls.generateDataKey(input);
    expect(lastRequest()).toEqual(bySdk);
    expect(bySdk.target).toBe('TrentService.GenerateDataKey');
    expect(bySdk.contentType).toBe('application/x-amz-json-1.1');

    const decrypt = { CiphertextBlob: made.CiphertextBlob!, KeyId: standIn().keyId, EncryptionContext: context };
    await sdkKmsCalls(sdk(KMSClient)).decrypt(decrypt);
    const decryptBySdk = lastRequest();
    await signedKmsCalls.decrypt(decrypt);
    expect(lastRequest()).toEqual(decryptBySdk);
    expect((decryptBySdk.body as { CiphertextBlob: string }).CiphertextBlob).toBe(Buffer.from(made.CiphertextBlob!).toString('base64'));
  });

  it('SQS SendMessageBatch (awsJson 1.0)', async () => {
    const input = { QueueUrl: 'https://sqs.us-east-1.amazonaws.com/111122223333/webhook-events', Entries: [{ Id: '0', MessageBody: '{"eventId":"evt_1"}', MessageGroupId: 'acct-signed' }] };
    // The SDK checks each entry's MD5 against the stand-in's answer, as it does SQS's.
    await sdkSqsCalls(sdk(SQSClient)).sendMessageBatch(input);
    const bySdk = lastRequest();
    await signedSqsCalls.sendMessageBatch(input);
    expect(lastRequest()).toEqual(bySdk);
    expect(bySdk).toMatchObject({ target: 'AmazonSQS.SendMessageBatch', contentType: 'application/x-amz-json-1.0' });
    expect(standIn().sentBodies()).toEqual(['{"eventId":"evt_1"}', '{"eventId":"evt_1"}']);
  });

  it('Secrets Manager GetSecretValue', async () => {
    const secretId = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:origin-verify-AbCdEf';
    const value = randomBytes(24).toString('base64url');
    standIn().putSecret(secretId, value);
    const bySdkAnswer = await sdk(SecretsManagerClient).send(new GetSecretValueCommand({ SecretId: secretId }));
    const bySdk = lastRequest();
    const answer = await signedCall<{ SecretString?: string }>(SECRETS_MANAGER, 'GetSecretValue', { SecretId: secretId });
    expect(lastRequest()).toEqual(bySdk);
    expect(answer.SecretString).toBe(bySdkAnswer.SecretString);
    expect(answer.SecretString).toBe(value);
  });
});

describe('the same answers as the SDK reads', () => {
  it('a data key made by one opens with the other, and a wrong context is refused by both alike', async () => {
    const bySdk = await sdkKmsCalls(sdk(KMSClient)).generateDataKey({ KeyId: standIn().keyId, KeySpec: 'AES_256', EncryptionContext: context });
    const opened = await signedKmsCalls.decrypt({ CiphertextBlob: bySdk.CiphertextBlob!, KeyId: standIn().keyId, EncryptionContext: context });
    expect(Buffer.from(opened.Plaintext!)).toEqual(Buffer.from(bySdk.Plaintext!));

    const signed = await signedKmsCalls.generateDataKey({ KeyId: standIn().keyId, KeySpec: 'AES_256', EncryptionContext: context });
    const openedBySdk = await sdkKmsCalls(sdk(KMSClient)).decrypt({ CiphertextBlob: signed.CiphertextBlob!, KeyId: standIn().keyId, EncryptionContext: context });
    expect(Buffer.from(openedBySdk.Plaintext!)).toEqual(Buffer.from(signed.Plaintext!));
    expect(signed.Plaintext).toHaveLength(32);

    const other = { ...context, account: 'acct-other' };
    const bySdkError = await sdk(KMSClient).send(new DecryptCommand({ CiphertextBlob: signed.CiphertextBlob!, KeyId: standIn().keyId, EncryptionContext: other })).catch((e: Error) => e);
    const signedError = await signedKmsCalls.decrypt({ CiphertextBlob: signed.CiphertextBlob!, KeyId: standIn().keyId, EncryptionContext: other }).catch((e: Error) => e);
    expect(bySdkError).toBeInstanceOf(Error);
    expect(signedError).toBeInstanceOf(AwsCallError);
    expect((signedError as AwsCallError).name).toBe((bySdkError as Error).name);
    expect((signedError as AwsCallError).name).toBe('InvalidCiphertextException');
    expect((signedError as AwsCallError).$metadata).toMatchObject({ httpStatusCode: 400, attempts: 1 });
    expect((signedError as AwsCallError).$fault).toBe('client');

    // Another key named: KMS says so rather than that the ciphertext is bad, to both.
    const otherKey = `${standIn().keyId}-other`;
    const wrongKeyBySdk = await sdk(KMSClient).send(new DecryptCommand({ CiphertextBlob: signed.CiphertextBlob!, KeyId: otherKey, EncryptionContext: context })).catch((e: Error) => e);
    const wrongKeySigned = await signedKmsCalls.decrypt({ CiphertextBlob: signed.CiphertextBlob!, KeyId: otherKey, EncryptionContext: context }).catch((e: Error) => e);
    expect([(wrongKeyBySdk as Error).name, (wrongKeySigned as Error).name]).toEqual(['IncorrectKeyException', 'IncorrectKeyException']);
  });

  it('an unknown operation and a wrong signature are refused, not retried', async () => {
    const unknown = await signedCall(KMS, 'ScheduleKeyDeletion', { KeyId: standIn().keyId }).catch((e: AwsCallError) => e);
    expect(unknown).toMatchObject({ name: 'UnknownOperationException', $metadata: { attempts: 1 } });

    const wrong = { ...standIn().env, AWS_SECRET_ACCESS_KEY: randomBytes(30).toString('base64') };
    const refused = await signedCall(KMS, 'GenerateDataKey', { KeyId: standIn().keyId, KeySpec: 'AES_256' }, { env: wrong }).catch((e: AwsCallError) => e);
    expect(refused).toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 400, attempts: 1 } });
    // Signed for another service (its credential scope names sqs): refused as AWS would.
    const misnamed = await signedCall({ ...KMS, endpointPrefix: 'sqs' }, 'GenerateDataKey', { KeyId: standIn().keyId, KeySpec: 'AES_256' }, { env: { ...standIn().env, AWS_ENDPOINT_URL_KMS: standIn().url } }).catch((e: AwsCallError) => e);
    expect(misnamed).toMatchObject({ name: 'InvalidSignatureException' });
    // The stand-in's check can fail the SDK too: its signature is held to the same secret.
    const bySdk = await new KMSClient({ region: standIn().region, endpoint: standIn().url, credentials: { accessKeyId: standIn().credentials.accessKeyId, secretAccessKey: wrong.AWS_SECRET_ACCESS_KEY }, maxAttempts: 1 })
      .send(new GenerateDataKeyCommand({ KeyId: standIn().keyId, KeySpec: 'AES_256' }))
      .catch((e: Error) => e);
    expect((bySdk as Error).name).toBe('InvalidSignatureException');
  });

  it('an SQS refusal is read alike: an empty batch', async () => {
    const input = { QueueUrl: 'https://sqs.us-east-1.amazonaws.com/111122223333/webhook-events', Entries: [] };
    const bySdk = await sdk(SQSClient).send(new SendMessageBatchCommand(input)).catch((e: Error) => e);
    const signed = await signedSqsCalls.sendMessageBatch(input).catch((e: AwsCallError) => e);
    expect((bySdk as Error).name).toBe('EmptyBatchRequest');
    expect(signed).toMatchObject({ name: 'EmptyBatchRequest', retryable: false, $metadata: { httpStatusCode: 400 } });
  });

  it('a session token is signed and sent, as Lambda’s role credentials carry one', async () => {
    const token = randomBytes(40).toString('base64');
    await signedCall(SQS, 'SendMessage', { QueueUrl: 'https://sqs.us-east-1.amazonaws.com/111122223333/q', MessageBody: '{}' }, { env: { ...standIn().env, AWS_SESSION_TOKEN: token } });
    const headers = standIn().requests().at(-1)!.headers;
    expect(headers['x-amz-security-token']).toBe(token);
    expect(String(headers.authorization)).toContain('x-amz-security-token');
  });
});

describe('retries, as the SDK’s standard mode', () => {
  const generate = () => signedKmsCalls.generateDataKey({ KeyId: standIn().keyId, KeySpec: 'AES_256', EncryptionContext: context });

  it('a 5xx, a throttling error and a broken connection are tried again, up to 3 attempts', async () => {
    standIn().failNext('TrentService.GenerateDataKey', 1, { status: 503, code: 'KMSInternalException' });
    standIn().failNext('TrentService.GenerateDataKey', 1, { status: 400, code: 'ThrottlingException' });
    const answer = await signedCall<{ Plaintext?: string }>(KMS, 'GenerateDataKey', { KeyId: standIn().keyId, KeySpec: 'AES_256' });
    expect(answer.Plaintext).toBeTruthy();
    expect(answer.$metadata.attempts).toBe(3);
    expect(standIn().calls('TrentService.GenerateDataKey')).toBe(3);

    standIn().reset();
    standIn().failNext('TrentService.GenerateDataKey', 1, 'reset');
    expect((await generate()).Plaintext).toHaveLength(32);
    expect(standIn().calls('TrentService.GenerateDataKey')).toBe(2);
  });

  it('gives up after 3 attempts with the last error; a client error is not retried', async () => {
    standIn().failNext('TrentService.GenerateDataKey', 3, { status: 500, code: 'KMSInternalException' });
    const failed = await generate().catch((e: AwsCallError) => e);
    expect(failed).toMatchObject({ name: 'KMSInternalException', $fault: 'server', retryable: true, $metadata: { attempts: 3, httpStatusCode: 500 } });

    standIn().reset();
    standIn().failNext('TrentService.GenerateDataKey', 1, { status: 400, code: 'ValidationException' });
    const refused = await generate().catch((e: AwsCallError) => e);
    expect(refused).toMatchObject({ name: 'ValidationException', retryable: false, $metadata: { attempts: 1 } });
    expect(standIn().calls()).toBe(1);
  });

  it('an attempt with no answer in time is abandoned and tried again', async () => {
    standIn().failNext('TrentService.GenerateDataKey', 1, 'hang');
    const answer = await signedCall<{ Plaintext?: string }>(KMS, 'GenerateDataKey', { KeyId: standIn().keyId, KeySpec: 'AES_256' }, { attemptTimeoutMs: 200 });
    expect(answer.$metadata.attempts).toBe(2);
  });

  it('decides as the SDK: its own classification reads the errors a signed call makes', () => {
    const refused = (code: string, status: number) => new AwsCallError(code, code, { metadata: { httpStatusCode: status, attempts: 1, totalRetryDelay: 0 }, fault: status >= 500 ? 'server' : 'client' });
    const unanswered = (socketCode: string) => new AwsCallError(socketCode, socketCode, { metadata: { attempts: 1, totalRetryDelay: 0 }, fault: 'client', socketCode });
    // Throttling: the SDK's longer base.
    expect(retryBaseMs(refused('ThrottlingException', 400))).toBe(Retry.throttlingDelay());
    expect(retryBaseMs(refused('ProvisionedThroughputExceededException', 400))).toBe(Retry.throttlingDelay());
    expect(retryBaseMs(refused('Http429', 429))).toBe(Retry.throttlingDelay());
    // Transient: 500, 502, 503, 504, dropped connections, DNS failures, an attempt past its deadline.
    for (const status of [500, 502, 503, 504]) expect(retryBaseMs(refused('InternalFailure', status)), String(status)).toBe(Retry.delay());
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND']) expect(retryBaseMs(unanswered(code)), code).toBe(Retry.delay());
    expect(retryBaseMs(unanswered('TimeoutError'))).toBe(Retry.delay());
    // Not retried: refusals of the request itself, and server errors the SDK does not retry.
    for (const [code, status] of [['ConditionalCheckFailedException', 400], ['AccessDeniedException', 400], ['ValidationException', 400], ['NotImplemented', 501]] as const) {
      expect(retryBaseMs(refused(code, status)), code).toBeUndefined();
    }
    expect(refused('ValidationException', 400).retryable).toBe(false);
    expect(retryDelayMs(100, 1, () => 0.999)).toBe(99);
    expect(retryDelayMs(100, 3, () => 0.5)).toBe(200);
    expect(retryDelayMs(1000, 10, () => 0.999)).toBe(19_980);
    expect(retryDelayMs(100, 2, () => 0)).toBe(0);
  });
});

describe('the table through signed calls (dynalite)', () => {
  let dynamo: LocalDynamo;
  beforeAll(async () => {
    dynamo = await startLocalDynamo({ tableName: 'signed-calls' });
  });
  afterAll(() => dynamo.stop());

  const signedTable = (): Table => ({
    client: signedTableClient({ env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' } }),
    tableName: dynamo.tableName,
  });

  it('reads what the SDK wrote, answers a GetItem as the SDK does, and a failed condition is an answer', async () => {
    const sdkClient = localDynamoClient(dynamo.endpoint);
    const bySdk = { client: sdkTableClient(sdkClient), tableName: dynamo.tableName };
    const at = new Date('2026-11-28T12:00:00Z').toISOString();
    await store.putAccount(bySdk, { accountId: 'acct-signed', name: 'Signed calls', integrationsEnabled: true, createdAt: at, updatedAt: at });

    const signed = signedTable();
    expect(await store.getAccount(signed, 'acct-signed')).toEqual(await store.getAccount(bySdk, 'acct-signed'));
    expect(await store.getAccount(signed, 'acct-missing')).toBeUndefined();

    const key = toItem({ pk: 'ACCOUNT#acct-signed', sk: 'ACCOUNT' });
    const { $metadata: sdkMeta, ...sdkAnswer } = await sdkClient.send(new SdkGetItemCommand({ TableName: dynamo.tableName, Key: key, ConsistentRead: true }));
    const { $metadata: signedMeta, ...signedAnswer } = await signedTableClient({ env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' } }).send(
      new GetItemCommand({ TableName: dynamo.tableName, Key: key, ConsistentRead: true }),
    );
    expect(signedAnswer).toEqual(sdkAnswer);
    expect(signedAnswer.Item).toBeDefined();
    expect(signedMeta).toMatchObject({ httpStatusCode: sdkMeta.httpStatusCode, attempts: 1 });

    // putAccount again for a new account is a conditional write elsewhere; here the store's own answer to a lost condition:
    expect(await store.setIntegrationsEnabled(signed, 'acct-missing', false)).toBeUndefined();
    expect((await store.setIntegrationsEnabled(signed, 'acct-signed', false))?.integrationsEnabled).toBe(false);
    expect((await store.getAccount(bySdk, 'acct-signed'))?.integrationsEnabled).toBe(false);
    sdkClient.destroy();
  });

  it('the API\u2019s other operations answer as through the SDK: batch writes, paged queries, batch reads, versioned puts, deletes', async () => {
    const env = { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };
    const signed = { client: signedTableClient({ env }), tableName: dynamo.tableName };
    const bySdk = { client: sdkTableClient(localDynamoClient(dynamo.endpoint)), tableName: dynamo.tableName };
    // 60 items of ~2 KB: three BatchWriteItem requests, and more than one page for a small query limit.
    const items = Array.from({ length: 60 }, (_, n) => ({ pk: 'ACCOUNT#acct-ops', sk: `ITEM#${String(n).padStart(3, '0')}`, body: 'x'.repeat(2000), n }));
    await batchWriteAll(signed, items.map((item) => ({ PutRequest: { Item: toItem(item) } })));
    const query = { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: toItem({ ':pk': 'ACCOUNT#acct-ops' }), Limit: 7 };
    const listed = await queryAll(signed, query);
    expect(listed).toEqual(await queryAll(bySdk, query));
    expect(listed.map((item) => item.n)).toEqual(items.map((item) => item.n));
    expect(await countAll(signed, { KeyConditionExpression: query.KeyConditionExpression, ExpressionAttributeValues: query.ExpressionAttributeValues })).toBe(60);
    const keys = items.slice(0, 30).map((item) => toItem({ pk: item.pk, sk: item.sk }));
    const read = (await batchGetAll(signed, keys)).map(fromItem);
    expect(read.map((item) => item.n).sort((a, b) => Number(a) - Number(b))).toEqual(items.slice(0, 30).map((item) => item.n));

    const versioned = { pk: 'ACCOUNT#acct-ops', sk: 'VERSIONED', version: 0, value: 'first' };
    expect(await putVersioned(signed, versioned, () => 'the versioned item')).toBe(1);
    await expect(putVersioned(signed, versioned, () => 'the versioned item')).rejects.toBeInstanceOf(VersionConflictError);
    expect(await putVersioned(bySdk, { ...versioned, version: 1, value: 'second' }, () => 'the versioned item')).toBe(2);

    const deleted = await signed.client.send(new DeleteItemCommand({ TableName: dynamo.tableName, Key: toItem({ pk: 'ACCOUNT#acct-ops', sk: 'VERSIONED' }), ReturnValues: 'ALL_OLD' }));
    expect(fromItem(deleted.Attributes!)).toMatchObject({ value: 'second', version: 2 });
  });
});
