/**
 * IAM policy evaluation for exactly the statement forms the gateway's template holds: Allow and
 * Deny, Action and Resource with `*`/`?` wildcards, Principal `{AWS: ...}` in key policies, and the
 * condition operators below. Anything else (NotAction, NotResource, another operator) throws, so
 * a new form in the template fails loudly here instead of being judged wrongly.
 *
 * Why not @cloud-copilot/iam-simulate (checked in test/iam/policy-evaluation.test.ts): its 0.1.173
 * never matches a `kms:EncryptionContext:<key>` condition (the vault's whole guard), and it refuses
 * `states:SendTaskSuccess` on a state machine ARN as a malformed request, while AWS evaluates that
 * action against the state machine (its AccessDenied messages name it). It stays a test oracle
 * for the forms it does judge (test/iam/policy-evaluation.test.ts compares the two).
 *
 * The logic follows AWS's documented policy evaluation: an explicit Deny wins; otherwise an Allow
 * is needed; otherwise implicitly denied. For a KMS key the key policy must allow too: either the
 * principal itself, or the account (`:root`) whose identity policies then decide.
 */

export type Values = string | readonly string[];

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action: Values;
  readonly Resource?: Values;
  readonly Principal?: { readonly AWS: Values } | '*';
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, Values>>>>;
}

export interface AccessRequest {
  /** The role's ARN (`arn:aws:iam::<account>:role/<name>`). */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  /** Condition keys of this request, e.g. `kms:EncryptionContext:account`. Names are case-insensitive. */
  readonly context: Readonly<Record<string, Values>>;
}

export type Decision = 'Allowed' | 'ExplicitlyDenied' | 'ImplicitlyDenied';

const list = (values: Values | undefined): readonly string[] => (values === undefined ? [] : typeof values === 'string' ? [values] : values);

/** IAM's wildcard match: `*` any run of characters, `?` one character, everything else literal. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'is' : 's').test(value);
}

function contextValue(context: AccessRequest['context'], key: string): readonly string[] | undefined {
  const wanted = key.toLowerCase();
  for (const [name, value] of Object.entries(context)) if (name.toLowerCase() === wanted) return list(value);
  return undefined;
}

const KNOWN_OPERATORS = new Set(['Null', 'StringEquals', 'ArnEquals', 'StringLike', 'ArnLike', 'StringNotEquals', 'Bool', 'ForAllValues:StringEquals', 'ForAllValues:StringLike', 'ForAnyValue:StringEquals']);

/** One condition operator over one key: true when it holds for this request. */
export function conditionHolds(operator: string, key: string, expected: readonly string[], context: AccessRequest['context']): boolean {
  const given = contextValue(context, key);
  const ifExists = operator.endsWith('IfExists');
  const base = ifExists ? operator.slice(0, -'IfExists'.length) : operator;
  if (!KNOWN_OPERATORS.has(base)) throw new Error(`IAM condition operator ${operator} is not one this evaluator knows (local/iam/policy-evaluation.ts)`);
  if (base === 'Null') return expected.some((flag) => (flag === 'true') === (given === undefined));
  if (given === undefined) return ifExists || base.startsWith('ForAllValues:');
  switch (base) {
    case 'StringEquals':
    case 'ArnEquals':
      return given.some((value) => expected.includes(value));
    case 'StringLike':
    case 'ArnLike':
      return given.some((value) => expected.some((pattern) => wildcardMatch(pattern, value)));
    case 'StringNotEquals':
      return given.every((value) => !expected.includes(value));
    case 'Bool':
      return given.some((value) => expected.includes(value.toLowerCase()));
    case 'ForAllValues:StringEquals':
      return given.every((value) => expected.includes(value));
    case 'ForAllValues:StringLike':
      return given.every((value) => expected.some((pattern) => wildcardMatch(pattern, value)));
    case 'ForAnyValue:StringEquals':
      return given.some((value) => expected.includes(value));
    default:
      return false;
  }
}

function conditionsHold(statement: PolicyStatement, request: AccessRequest): boolean {
  return Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) => conditionHolds(operator, key, list(expected), request.context)),
  );
}

function principalMatches(statement: PolicyStatement, request: AccessRequest): boolean {
  if (statement.Principal === undefined) return true;
  if (statement.Principal === '*') return true;
  const account = request.principal.split(':')[4];
  return list(statement.Principal.AWS).some((principal) => principal === '*' || principal === request.principal || principal === `arn:aws:iam::${account}:root`);
}

/** Whether the statement applies to the request (action, resource, principal and conditions all match). */
export function statementApplies(statement: PolicyStatement, request: AccessRequest): boolean {
  const known = new Set(['Sid', 'Effect', 'Action', 'Resource', 'Principal', 'Condition']);
  for (const field of Object.keys(statement)) if (!known.has(field)) throw new Error(`IAM statement field ${field} is not one this evaluator knows`);
  return (
    list(statement.Action).some((action) => wildcardMatch(action, request.action, true)) &&
    list(statement.Resource ?? '*').some((resource) => wildcardMatch(resource, request.resource)) &&
    principalMatches(statement, request) &&
    conditionsHold(statement, request)
  );
}

/** Identity-policy evaluation: explicit deny wins, then an allow, else implicit deny. */
export function evaluate(statements: readonly PolicyStatement[], request: AccessRequest): Decision {
  const applying = statements.filter((statement) => statementApplies(statement, request));
  if (applying.some((statement) => statement.Effect === 'Deny')) return 'ExplicitlyDenied';
  return applying.some((statement) => statement.Effect === 'Allow') ? 'Allowed' : 'ImplicitlyDenied';
}

/**
 * A KMS call: the key policy is the first gate. It allows the principal itself, or the account's
 * root (then the identity policy must allow as well); a deny in either policy wins.
 */
export function evaluateWithKeyPolicy(identity: readonly PolicyStatement[], keyPolicy: readonly PolicyStatement[], request: AccessRequest): Decision {
  const inKeyPolicy = evaluate(keyPolicy, request);
  const inIdentity = evaluate(identity, request);
  if (inKeyPolicy === 'ExplicitlyDenied' || inIdentity === 'ExplicitlyDenied') return 'ExplicitlyDenied';
  const account = request.principal.split(':')[4];
  const root = `arn:aws:iam::${account}:root`;
  const namesPrincipal = keyPolicy.some(
    (statement) =>
      statement.Effect === 'Allow' &&
      statement.Principal !== undefined &&
      statement.Principal !== '*' &&
      list(statement.Principal.AWS).includes(request.principal) &&
      statementApplies(statement, request),
  );
  if (namesPrincipal) return 'Allowed';
  const delegatesToIam = keyPolicy.some(
    (statement) =>
      statement.Effect === 'Allow' &&
      statement.Principal !== undefined &&
      statement.Principal !== '*' &&
      list(statement.Principal.AWS).includes(root) &&
      statementApplies(statement, request),
  );
  return delegatesToIam && inIdentity === 'Allowed' ? 'Allowed' : 'ImplicitlyDenied';
}
