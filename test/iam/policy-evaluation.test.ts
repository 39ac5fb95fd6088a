import { runSimulation } from '@cloud-copilot/iam-simulate';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate, evaluateWithKeyPolicy, wildcardMatch, type AccessRequest, type PolicyStatement } from '../../local/iam/policy-evaluation';

const ACCOUNT = '111122223333';
const ROLE = `arn:aws:iam::${ACCOUNT}:role/api`;
const TABLE = `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/gateway`;
const KEY = `arn:aws:kms:us-east-1:${ACCOUNT}:key/00000000-0000-4000-8000-00000000c0de`;
const request = (action: string, resource: string, context: AccessRequest['context'] = {}): AccessRequest => ({ principal: ROLE, action, resource, context });

const vaultContext = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['account', 'connector'] },
  Null: { 'kms:EncryptionContext:account': 'false', 'kms:EncryptionContext:connector': 'false' },
};
const contextOf = (context: Record<string, string>) => ({
  'kms:EncryptionContextKeys': Object.keys(context),
  ...Object.fromEntries(Object.entries(context).map(([k, v]) => [`kms:EncryptionContext:${k}`, v])),
});

describe('the local IAM evaluator, against AWS’s documented evaluation logic', () => {
  it('allows only what a statement allows, on the resources it names', () => {
    const policy: PolicyStatement[] = [{ Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:Query'], Resource: [TABLE, `${TABLE}/index/gsi1`] }];
    expect(evaluate(policy, request('dynamodb:GetItem', TABLE))).toBe('Allowed');
    expect(evaluate(policy, request('dynamodb:Query', `${TABLE}/index/gsi1`))).toBe('Allowed');
    expect(evaluate(policy, request('dynamodb:Scan', TABLE))).toBe('ImplicitlyDenied');
    expect(evaluate(policy, request('dynamodb:Query', `${TABLE}/index/other`))).toBe('ImplicitlyDenied');
    expect(evaluate(policy, request('dynamodb:GetItem', `${TABLE}2`))).toBe('ImplicitlyDenied');
    // Action names are case-insensitive, resources are not.
    expect(evaluate(policy, request('DynamoDB:getitem', TABLE))).toBe('Allowed');
    expect(evaluate(policy, request('dynamodb:GetItem', TABLE.toUpperCase()))).toBe('ImplicitlyDenied');
  });

  it('lets an explicit deny win over any allow', () => {
    const policy: PolicyStatement[] = [
      { Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' },
      { Effect: 'Deny', Action: 'dynamodb:Scan', Resource: TABLE },
    ];
    expect(evaluate(policy, request('dynamodb:Scan', TABLE))).toBe('ExplicitlyDenied');
    expect(evaluate(policy, request('dynamodb:GetItem', TABLE))).toBe('Allowed');
  });

  it('binds KMS use to the {account, connector} context: both keys, nothing else', () => {
    const policy: PolicyStatement[] = [{ Effect: 'Allow', Action: 'kms:Decrypt', Resource: KEY, Condition: vaultContext }];
    expect(evaluate(policy, request('kms:Decrypt', KEY, contextOf({ account: 'a1', connector: 'payment' })))).toBe('Allowed');
    expect(evaluate(policy, request('kms:Decrypt', KEY, contextOf({ account: 'a1' })))).toBe('ImplicitlyDenied');
    expect(evaluate(policy, request('kms:Decrypt', KEY, {}))).toBe('ImplicitlyDenied');
    expect(evaluate(policy, request('kms:Decrypt', KEY, contextOf({ account: 'a1', connector: 'payment', purpose: 'webhook' })))).toBe('ImplicitlyDenied');
  });

  it('needs the key policy too: a role the key policy does not name cannot use the key, whatever its own policy says', () => {
    const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 'kms:*', Resource: '*' }];
    const admin: PolicyStatement = { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` }, Action: ['kms:Describe*', 'kms:Put*'], Resource: '*' };
    const user: PolicyStatement = { Effect: 'Allow', Principal: { AWS: ROLE }, Action: 'kms:Decrypt', Resource: '*', Condition: vaultContext };
    const context = contextOf({ account: 'a1', connector: 'payment' });
    expect(evaluateWithKeyPolicy(identity, [admin], request('kms:Decrypt', KEY, context))).toBe('ImplicitlyDenied');
    expect(evaluateWithKeyPolicy(identity, [admin], request('kms:DescribeKey', KEY))).toBe('Allowed');
    expect(evaluateWithKeyPolicy([], [admin, user], request('kms:Decrypt', KEY, context))).toBe('Allowed');
    expect(evaluateWithKeyPolicy([], [admin, user], request('kms:Decrypt', KEY, contextOf({ account: 'a1' })))).toBe('ImplicitlyDenied');
    expect(evaluateWithKeyPolicy([{ Effect: 'Deny', Action: 'kms:*', Resource: '*' }], [admin, user], request('kms:Decrypt', KEY, context))).toBe('ExplicitlyDenied');
  });

  it('refuses to judge a statement form it does not know, rather than guess', () => {
    const policy = [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: '*', Condition: { DateGreaterThan: { 'aws:CurrentTime': '2020-01-01' } } }] as PolicyStatement[];
    expect(() => evaluate(policy, request('dynamodb:GetItem', TABLE))).toThrow(/DateGreaterThan/);
    const notAction = [{ Effect: 'Allow', NotAction: 'dynamodb:Scan', Resource: '*' }] as unknown as PolicyStatement[];
    expect(() => evaluate(notAction, request('dynamodb:GetItem', TABLE))).toThrow(/NotAction/);
  });

  it('matches wildcards as IAM does (property: `*` spans any text, `?` one character, the rest literal)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (before, middle, after) => {
        const literal = (text: string) => text.replace(/[*?]/g, '');
        const [a, m, b] = [literal(before), literal(middle), literal(after)];
        expect(wildcardMatch(`${a}*${b}`, `${a}${m}${b}`)).toBe(true);
        expect(wildcardMatch(a, a)).toBe(true);
        if (m.length === 1) expect(wildcardMatch(`${a}?${b}`, `${a}${m}${b}`)).toBe(true);
        if (m.length > 0) expect(wildcardMatch(`${a}${b}`, `${a}${m}${b}`)).toBe(false);
      }),
    );
  });

  it('property: a deny statement added anywhere never lets more through, and an allow never refuses more', () => {
    const actions = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:Scan', 'sqs:SendMessage'];
    const resources = [TABLE, `${TABLE}/index/gsi1`, `arn:aws:sqs:us-east-1:${ACCOUNT}:q`, '*', `${TABLE}*`];
    const statement = fc.record({
      Effect: fc.constantFrom('Allow' as const, 'Deny' as const),
      Action: fc.subarray(actions, { minLength: 1 }),
      Resource: fc.subarray(resources, { minLength: 1 }),
    });
    fc.assert(
      fc.property(fc.array(statement, { maxLength: 5 }), statement, fc.constantFrom(...actions), fc.constantFrom(TABLE, `${TABLE}/index/gsi1`), (policy, extra, action, resource) => {
        const before = evaluate(policy, request(action, resource));
        const after = evaluate([...policy, extra], request(action, resource));
        if (extra.Effect === 'Deny') expect(before !== 'Allowed' || after === 'Allowed' || after === 'ExplicitlyDenied').toBe(true);
        if (extra.Effect === 'Deny' && after === 'Allowed') expect(before).toBe('Allowed');
        if (extra.Effect === 'Allow' && before === 'Allowed') expect(after).toBe('Allowed');
        if (before === 'ExplicitlyDenied') expect(after).toBe('ExplicitlyDenied');
      }),
    );
  });

  it('property: agrees with @cloud-copilot/iam-simulate on identity policies over DynamoDB and SQS (the forms that tool judges)', async () => {
    const actions = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:Scan', 'sqs:SendMessage', 'sqs:ReceiveMessage'];
    const resources = [TABLE, `${TABLE}/index/gsi1`, `arn:aws:sqs:us-east-1:${ACCOUNT}:q`, `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/*`, '*'];
    const statement = fc.record({
      Effect: fc.constantFrom('Allow' as const, 'Deny' as const),
      Action: fc.subarray([...actions, 'dynamodb:*', 'sqs:Send*'], { minLength: 1 }),
      Resource: fc.subarray(resources, { minLength: 1 }),
    });
    const requested = fc.constantFrom(
      ...actions.flatMap((action) => (action.startsWith('sqs') ? [[action, `arn:aws:sqs:us-east-1:${ACCOUNT}:q`]] : [[action, TABLE], [action, `${TABLE}/index/gsi1`]])),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(statement, { minLength: 1, maxLength: 4 }), requested, async (policy, [action, resource]) => {
        const theirs = await runSimulation(
          {
            request: { principal: ROLE, action: action!, resource: { resource: resource!, accountId: ACCOUNT }, contextVariables: {} },
            identityPolicies: [{ name: 'role', policy: { Version: '2012-10-17', Statement: policy } }],
            serviceControlPolicies: [],
            resourceControlPolicies: [],
          },
          {},
        );
        expect(theirs.resultType).toBe('single');
        if (theirs.resultType === 'single') expect(evaluate(policy, request(action!, resource!))).toBe(theirs.overallResult);
      }),
      { numRuns: 60 },
    );
  });
});

describe('why @cloud-copilot/iam-simulate 0.1.173 is not the runtime evaluator (checked here, so an upgrade that fixes it shows)', () => {
  const simulate = (action: string, resource: string, context: Record<string, string | string[]>, keyPolicy: object) =>
    runSimulation(
      {
        request: { principal: ROLE, action, resource: { resource, accountId: ACCOUNT }, contextVariables: context },
        identityPolicies: [],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        resourcePolicy: keyPolicy,
      } as never,
      {},
    );

  it('never matches a kms:EncryptionContext:<key> condition, which AWS matches (the vault’s whole guard)', async () => {
    const keyPolicy = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: ROLE }, Action: 'kms:Decrypt', Resource: '*', Condition: { StringEquals: { 'kms:EncryptionContext:purpose': 'webhook' } } }] };
    const theirs = await simulate('kms:Decrypt', KEY, { 'kms:EncryptionContext:purpose': 'webhook', 'kms:EncryptionContextKeys': ['purpose'] }, keyPolicy);
    expect(theirs.resultType === 'single' && theirs.overallResult).toBe('ImplicitlyDenied');
    const ours = evaluateWithKeyPolicy([], keyPolicy.Statement as PolicyStatement[], request('kms:Decrypt', KEY, contextOf({ purpose: 'webhook' })));
    expect(ours).toBe('Allowed');
  });

  it('refuses states:SendTaskSuccess on a state machine ARN as malformed, while AWS judges it against the state machine', async () => {
    const theirs = await runSimulation(
      {
        request: { principal: ROLE, action: 'states:SendTaskSuccess', resource: { resource: `arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:x`, accountId: ACCOUNT }, contextVariables: {} },
        identityPolicies: [{ name: 'role', policy: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'states:SendTaskSuccess', Resource: '*' }] } }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    expect(theirs.resultType).toBe('error');
  });
});

describe('dynamodb:LeadingKeys, as DynamoDB gives it to IAM', () => {
  it("lets a webhook receiver update its delivery counters and no other partition's items", async () => {
    const { rolePolicies } = await import('../../local/iam/role-policies');
    const { localArns } = await import('../../local/iam/local-arns');
    const { leadingKeys } = await import('../../local/iam/guarded-services');
    const { historyKey } = await import('../../shared/history/history-store');
    const { key } = await import('../../shared/store/table');
    const receiver = rolePolicies().functions['webhook-receiver'];
    const update = (pk: string): AccessRequest => ({
      principal: receiver.role,
      action: 'dynamodb:UpdateItem',
      resource: localArns.table,
      context: leadingKeys('UpdateItem', { Key: { pk: { S: pk }, sk: { S: 'x' } } }),
    });
    expect(evaluate(receiver.statements, update(historyKey.deliveryHour('acme', 'payment', '2026-11-27T22:00:00.000Z').pk))).toBe('Allowed');
    expect(evaluate(receiver.statements, update(key.connection('acme', 'payment').pk))).not.toBe('Allowed');
    expect(evaluate(receiver.statements, update(key.record('acme', 'payment', 'customers', 'cus_1').pk))).not.toBe('Allowed');
  });
});
