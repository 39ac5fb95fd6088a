import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '../../shared/aws/signed-call';

/**
 * KMS, SQS, Secrets Manager, EventBridge and Step Functions on loopback, for the calls the
 * gateway's functions make without the SDK (shared/aws/signed-call.ts): none of them has a local
 * server. It speaks their JSON protocols
 * as their API references describe them, for the actions the gateway uses, and nothing else:
 *
 * - KMS `GenerateDataKey` (a key spec or a number of bytes required) and `Decrypt`: a data key
 *   decrypts only under the exact encryption context it was made with (else
 *   `InvalidCiphertextException`) and the key that made it, if the request names one (else
 *   `IncorrectKeyException`);
 * - SQS `SendMessageBatch` (every entry taken, with its body's MD5 as SQS answers it) and
 *   `ChangeMessageVisibility`;
 * - SQS `SendMessage`, `ReceiveMessage` (a long poll: held until a message comes or its wait
 *   ends), `DeleteMessage` and `ChangeMessageVisibility` (0 makes a received message visible again),
 *   on the poller-notice queue;
 * - Secrets Manager `GetSecretValue` (`ResourceNotFoundException` for an unknown id);
 * - EventBridge `PutEvents` (at most 10 entries; an entry whose `Detail` is not a JSON object fails
 *   alone, `MalformedDetail`, counted in `FailedEntryCount`);
 * - Step Functions `StartExecution` (a name used again with the same input answers the first
 *   execution; with another input, `ExecutionAlreadyExists`; every execution stays open here, where
 *   AWS answers `ExecutionAlreadyExists` for a closed one whatever the input) and `SendTaskSuccess`.
 *
 * Every request must carry a valid Signature V4 for the stand-in's credentials (else
 * `InvalidSignatureException`, 400, as the JSON services answer it).
 *
 * Sources: the AWS KMS API Reference (GenerateDataKey, Decrypt, InvalidCiphertextException), the
 * Amazon SQS API Reference (SendMessageBatch, SendMessage, ReceiveMessage, DeleteMessage,
 * ChangeMessageVisibility, EmptyBatchRequest, TooManyEntriesInBatchRequest), the AWS Secrets Manager
 * API Reference (GetSecretValue, ResourceNotFoundException), the Amazon EventBridge API Reference
 * (PutEvents, PutEventsResultEntry), the AWS Step Functions API Reference (StartExecution,
 * ExecutionAlreadyExists, SendTaskSuccess), and for the error body (`__type`, `message`, status 400) DynamoDB's
 * "Error handling with DynamoDB", which the JSON services share. test/aws/signed-call.test.ts holds it to the
 * SDK: the SDK's own clients get the same answers from it as from AWS's descriptions, so it is not a
 * contract we wrote on both sides.
 */
export interface AwsStandIn {
  /** `http://127.0.0.1:<port>`: every service's endpoint. */
  url: string;
  /** Environment for a signed call or an SDK client to reach it (endpoints, region, credentials). */
  env: Record<string, string>;
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  keyId: string;
  /** Sets a secret Secrets Manager answers for `GetSecretValue`. */
  putSecret(secretId: string, value: string): void;
  /** The next `times` requests for `target` (`TrentService.Decrypt`...) are answered with this error. */
  failNext(target: string, times: number, failure: { status: number; code: string } | 'hang' | 'reset'): void;
  /** Requests received, by target (failed ones too). */
  calls(target?: string): number;
  /** Requests their caller gave up on before the stand-in answered (a long poll abandoned), by target. */
  abandoned(target: string): number;
  /** Each request as received: target, content type and body (JSON parsed). */
  requests(): Array<{ target: string; contentType: string; body: unknown; headers: Record<string, string | string[] | undefined> }>;
  /** The message bodies SQS took, in order. */
  sentBodies(): string[];
  /** The entries EventBridge took, in order. */
  events(): Array<Record<string, unknown>>;
  /** The executions Step Functions started, and the task tokens it was answered. */
  executions(): Array<{ stateMachineArn: string; name: string; input: string }>;
  taskAnswers(): Array<{ taskToken: string; output: string }>;
  /** The next `count` PutEvents entries fail alone with this `ErrorCode` (`ThrottlingException`, `InternalFailure`). */
  failEntries(count: number, errorCode: string): void;
  /** Messages on a queue not yet deleted (visible or received). */
  queued(queueUrl: string): number;
  reset(): void;
  stop(): Promise<void>;
}

type Answer = { status: number; body: unknown };

/** Each target prefix's signing name: what a request's credential scope must say. */
const SIGNING_NAMES: Record<string, string> = { TrentService: 'kms', AmazonSQS: 'sqs', secretsmanager: 'secretsmanager', AWSEvents: 'events', AWSStepFunctions: 'states' };
/** The target prefixes that speak awsJson 1.1 (the others 1.0). */
const JSON_1_1 = new Set(['TrentService', 'secretsmanager', 'AWSEvents']);

interface QueuedMessage {
  id: string;
  body: string;
  receiptHandle?: string;
  /** Hidden until (epoch ms) after a receive. */
  hiddenUntil: number;
}

export async function startAwsStandIn(options: { region?: string } = {}): Promise<AwsStandIn> {
  const region = options.region ?? 'us-east-1';
  const credentials = { accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64') };
  const account = '111122223333';
  const keyId = `arn:aws:kms:${region}:${account}:key/${randomUUID()}`;
  const dataKeys = new Map<string, { plaintext: Buffer; context: string; keyId: string }>();
  const secrets = new Map<string, string>();
  const failures = new Map<string, Array<{ status: number; code: string } | 'hang' | 'reset'>>();
  let received: ReturnType<AwsStandIn['requests']> = [];
  let sent: string[] = [];
  let events: Array<Record<string, unknown>> = [];
  let executions: Array<{ stateMachineArn: string; name: string; input: string }> = [];
  let taskAnswers: Array<{ taskToken: string; output: string }> = [];
  let failingEntries: string[] = [];
  const queues = new Map<string, QueuedMessage[]>();
  const queue = (url: unknown) => queues.get(String(url)) ?? queues.set(String(url), []).get(String(url))!;
  /** SQS's default visibility timeout: a received message is hidden this long unless deleted or given back. */
  const VISIBILITY_MS = 30_000;

  const error = (status: number, code: string, message: string): Answer => ({ status, body: { __type: code, message } });
  const context = (value: unknown) => JSON.stringify(Object.entries((value as Record<string, string> | undefined) ?? {}).sort());

  /** Bumped by `reset`: a long poll of an earlier test stops rather than take a later test's messages. */
  let generation = 0;
  let abandoned: string[] = [];
  /** `gone()`: the caller left, or the stand-in was reset since the request came. */
  const actions: Record<string, (input: Record<string, unknown>, request: { gone(): boolean }) => Answer | Promise<Answer>> = {
    'TrentService.GenerateDataKey': (input) => {
      if (input.KeyId !== keyId) return error(400, 'NotFoundException', `Key '${String(input.KeyId)}' does not exist`);
      if (input.KeySpec === undefined && input.NumberOfBytes === undefined) return error(400, 'ValidationException', 'Please specify either number of bytes or key spec.');
      const plaintext = randomBytes(input.KeySpec === 'AES_128' ? 16 : input.KeySpec === 'AES_256' ? 32 : Number(input.NumberOfBytes));
      const blob = randomBytes(48);
      dataKeys.set(blob.toString('base64'), { plaintext, context: context(input.EncryptionContext), keyId });
      return { status: 200, body: { KeyId: keyId, Plaintext: plaintext.toString('base64'), CiphertextBlob: blob.toString('base64') } };
    },
    'TrentService.Decrypt': (input) => {
      const entry = dataKeys.get(String(input.CiphertextBlob));
      if (entry && input.KeyId !== undefined && input.KeyId !== entry.keyId) return error(400, 'IncorrectKeyException', 'The key ID in the request does not identify the KMS key that was used to encrypt the ciphertext.');
      if (!entry || entry.context !== context(input.EncryptionContext)) return error(400, 'InvalidCiphertextException', '');
      return { status: 200, body: { KeyId: entry.keyId, Plaintext: entry.plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' } };
    },
    'AmazonSQS.SendMessageBatch': (input) => {
      const entries = (input.Entries as Array<{ Id: string; MessageBody: string }> | undefined) ?? [];
      // The JSON protocol's codes (the SDK's query mode would add the older ones in x-amzn-query-error).
      if (entries.length === 0) return error(400, 'com.amazonaws.sqs#EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
      if (entries.length > 10) return error(400, 'com.amazonaws.sqs#TooManyEntriesInBatchRequest', 'Maximum number of entries per request are 10.');
      sent.push(...entries.map((entry) => entry.MessageBody));
      return {
        status: 200,
        body: { Successful: entries.map((entry) => ({ Id: entry.Id, MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(entry.MessageBody).digest('hex') })), Failed: [] },
      };
    },
    'AmazonSQS.ChangeMessageVisibility': (input) => {
      const message = [...queues.values()].flat().find((m) => m.receiptHandle === input.ReceiptHandle);
      if (!message) return error(400, 'com.amazonaws.sqs#ReceiptHandleIsInvalid', `The input receipt handle "${String(input.ReceiptHandle)}" is not a valid receipt handle.`);
      message.hiddenUntil = Date.now() + Number(input.VisibilityTimeout ?? 0) * 1000;
      return { status: 200, body: {} };
    },
    'AmazonSQS.SendMessage': (input) => {
      const body = String(input.MessageBody ?? '');
      if (body === '') return error(400, 'com.amazonaws.sqs#InvalidParameterValue', 'The request must contain the parameter MessageBody.');
      const id = randomUUID();
      queue(input.QueueUrl).push({ id, body, hiddenUntil: 0 });
      sent.push(body);
      return { status: 200, body: { MessageId: id, MD5OfMessageBody: createHash('md5').update(body).digest('hex') } };
    },
    'AmazonSQS.ReceiveMessage': async (input, request) => {
      const until = Date.now() + Number(input.WaitTimeSeconds ?? 0) * 1000;
      const max = Number(input.MaxNumberOfMessages ?? 1);
      for (;;) {
        if (request.gone()) return { status: 200, body: {} };
        const visible = queue(input.QueueUrl).filter((message) => message.hiddenUntil <= Date.now()).slice(0, max);
        if (visible.length > 0 || Date.now() >= until) {
          for (const message of visible) Object.assign(message, { receiptHandle: randomBytes(24).toString('base64'), hiddenUntil: Date.now() + VISIBILITY_MS });
          // No messages: no `Messages` member (the API reference gives none for this case; SQS has been
          // seen to answer `{}`, and the gateway reads an absent or empty list alike).
          return { status: 200, body: visible.length === 0 ? {} : { Messages: visible.map((m) => ({ MessageId: m.id, ReceiptHandle: m.receiptHandle, MD5OfBody: createHash('md5').update(m.body).digest('hex'), Body: m.body })) } };
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    'AmazonSQS.DeleteMessage': (input) => {
      const messages = queue(input.QueueUrl);
      const index = messages.findIndex((m) => m.receiptHandle === input.ReceiptHandle);
      // The API reference: a handle from an earlier receive succeeds without deleting the message.
      if (index >= 0) messages.splice(index, 1);
      return { status: 200, body: {} };
    },
    'AWSEvents.PutEvents': (input) => {
      const entries = (input.Entries as Array<Record<string, unknown>> | undefined) ?? [];
      if (entries.length === 0 || entries.length > 10) return error(400, 'ValidationException', '1 validation error detected: Value at \'entries\' failed to satisfy constraint: Member must have length less than or equal to 10');
      const results = entries.map((entry) => {
        let detail: unknown;
        try {
          detail = JSON.parse(String(entry.Detail));
        } catch {
          detail = undefined;
        }
        if (!detail || typeof detail !== 'object' || Array.isArray(detail)) return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
        const failing = failingEntries.shift();
        if (failing) return { ErrorCode: failing, ErrorMessage: 'stand-in failure' };
        events.push(entry);
        return { EventId: randomUUID() };
      });
      return { status: 200, body: { FailedEntryCount: results.filter((result) => 'ErrorCode' in result).length, Entries: results } };
    },
    'AWSStepFunctions.StartExecution': (input) => {
      const stateMachineArn = String(input.stateMachineArn ?? '');
      const name = String(input.name ?? randomUUID());
      const inputText = String(input.input ?? '{}');
      const executionArn = `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
      const earlier = executions.find((execution) => execution.stateMachineArn === stateMachineArn && execution.name === name);
      if (earlier && earlier.input !== inputText) return error(400, 'ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
      if (!earlier) executions.push({ stateMachineArn, name, input: inputText });
      return { status: 200, body: { executionArn, startDate: Date.now() / 1000 } };
    },
    'AWSStepFunctions.SendTaskSuccess': (input) => {
      if (typeof input.taskToken !== 'string' || input.taskToken === '') return error(400, 'InvalidToken', 'Invalid Token');
      taskAnswers.push({ taskToken: input.taskToken, output: String(input.output ?? '') });
      return { status: 200, body: {} };
    },
    'secretsmanager.GetSecretValue': (input) => {
      const value = secrets.get(String(input.SecretId));
      if (value === undefined) return error(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
      return { status: 200, body: { ARN: String(input.SecretId), Name: 'origin-verify', VersionId: randomUUID(), SecretString: value, VersionStages: ['AWSCURRENT'], CreatedDate: Date.now() / 1000 } };
    },
  };

  const server = createServer((request, response) => {
    const born = generation;
    let answered = false;
    let left = false;
    response.on('close', () => {
      left = !answered;
      if (left) abandoned.push(String(request.headers['x-amz-target'] ?? ''));
    });
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const target = String(request.headers['x-amz-target'] ?? '');
        const contentType = String(request.headers['content-type'] ?? '');
        let input: Record<string, unknown> = {};
        try {
          input = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        } catch {
          // Answered below as a serialization error.
        }
        received.push({ target, contentType, body: input, headers: { ...request.headers } });
        const failure = failures.get(target)?.shift();
        if (failure === 'hang') return;
        if (failure === 'reset') return void request.socket.destroy();
        const answer: Answer = failure
          ? error(failure.status, failure.code, 'stand-in failure')
          : !(await signatureValid(request, text, SIGNING_NAMES[target.split('.')[0]!]))
            ? error(400, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided.')
            : !/^application\/x-amz-json-1\.[01]$/.test(contentType)
              ? error(400, 'SerializationException', `unexpected content type ${contentType}`)
              : await (actions[target] ?? (() => error(400, 'UnknownOperationException', `stand-in does not answer ${target}`)))(input, { gone: () => left || generation !== born });
        // The caller gave up (a long poll it abandoned): nobody to answer.
        if (left || request.socket.destroyed) return;
        const version = JSON_1_1.has(target.split('.')[0]!) ? '1.1' : '1.0';
        const answerText = JSON.stringify(answer.body);
        answered = true;
        // With its length, as AWS answers (X-Ray records it), not chunked.
        response
          .writeHead(answer.status, { 'content-type': `application/x-amz-json-${version}`, 'x-amzn-requestid': randomUUID(), 'content-length': String(Buffer.byteLength(answerText)) })
          .end(answerText);
      })();
    });
  });

  /** Signature V4, checked as AWS does: the same canonical request, signed with the stand-in's secret, gives the same signature. */
  async function signatureValid(request: IncomingMessage, body: string, service: string | undefined): Promise<boolean> {
    const authorization = String(request.headers.authorization ?? '');
    const parts = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(authorization);
    const amzDate = String(request.headers['x-amz-date'] ?? '');
    // The credential scope names this service's signing name and region; host, date and target are signed.
    if (!parts || parts[1] !== credentials.accessKeyId || parts[3] !== region || parts[4] !== service || !/^\d{8}T\d{6}Z$/.test(amzDate)) return false;
    const signedHeaders = parts[5]!.split(';');
    if (!['host', 'x-amz-date', 'x-amz-target'].every((name) => signedHeaders.includes(name))) return false;
    const headers = Object.fromEntries(signedHeaders.filter((name) => name !== 'x-amz-date').map((name) => [name, String(request.headers[name] ?? '')]));
    const signer = new SignatureV4({ service: parts[4]!, region, credentials, sha256: Sha256, applyChecksum: false });
    const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
    const [path = '/', query = ''] = (request.url ?? '/').split('?');
    const signed = await signer.sign(
      { method: request.method ?? 'POST', protocol: 'http:', hostname: '127.0.0.1', path, query: Object.fromEntries(new URLSearchParams(query)), headers, body },
      { signingDate, signableHeaders: new Set(signedHeaders), unsignableHeaders: new Set() },
    );
    return String(signed.headers.authorization ?? signed.headers.Authorization) === authorization;
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    env: {
      AWS_ENDPOINT_URL_KMS: url,
      AWS_ENDPOINT_URL_SQS: url,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: url,
      AWS_ENDPOINT_URL_EVENTBRIDGE: url,
      AWS_ENDPOINT_URL_SFN: url,
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
    credentials,
    region,
    keyId,
    putSecret: (secretId, value) => void secrets.set(secretId, value),
    failNext(target, times, failure) {
      failures.set(target, [...(failures.get(target) ?? []), ...Array.from({ length: times }, () => failure)]);
    },
    calls: (target) => (target ? received.filter((request) => request.target === target).length : received.length),
    abandoned: (target) => abandoned.filter((each) => each === target).length,
    requests: () => [...received],
    sentBodies: () => [...sent],
    events: () => [...events],
    executions: () => [...executions],
    taskAnswers: () => [...taskAnswers],
    failEntries: (count, errorCode) => void failingEntries.push(...Array.from({ length: count }, () => errorCode)),
    queued: (queueUrl) => queue(queueUrl).length,
    reset() {
      generation += 1;
      abandoned = [];
      received = [];
      sent = [];
      events = [];
      executions = [];
      taskAnswers = [];
      failingEntries = [];
      queues.clear();
      failures.clear();
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Points this process's signed calls at the stand-in (its endpoints, region and credentials); returns the undo. */
export function useStandInEnvironment(standIn: Pick<AwsStandIn, 'env'>, extra: Record<string, string> = {}): () => void {
  const values = { ...standIn.env, ...extra };
  const previous = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  Object.assign(process.env, values);
  return () => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
