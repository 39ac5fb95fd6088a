import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HandlerName } from '../../shared/handler/function-settings';
import { evaluate, evaluateWithKeyPolicy, type Decision, type Values } from './policy-evaluation';
import { rolePolicies, type RolePolicies } from './role-policies';

/** One AWS call as IAM sees it. */
export interface AwsCall {
  readonly action: string;
  readonly resource: string;
  readonly context?: Readonly<Record<string, Values>>;
}

/** What AWS answers a call the role may not make (same name and message shape as the services' own). */
export class AccessDeniedError extends Error {
  override readonly name = 'AccessDeniedException';
  readonly $metadata = { httpStatusCode: 400 };
  readonly $fault = 'client';

  constructor(role: string, handler: string, call: AwsCall, decision: Decision) {
    const session = role.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/');
    const because = decision === 'ExplicitlyDenied' ? 'with an explicit deny' : 'because no policy allows the action';
    super(`User: ${session}/${handler} is not authorized to perform: ${call.action} on resource: ${call.resource} ${because}`);
  }
}

/** Which function is running: set around every handler invocation by the local runtime (runAs). */
const running = new AsyncLocalStorage<HandlerName>();

/** The function running now, if any. */
export const runningFunction = (): HandlerName | undefined => running.getStore();

/** Runs `work` as function `handler`: every AWS call made inside is judged against that function's role. */
export function runAs<T>(handler: HandlerName, work: () => T): T {
  return running.run(handler, work);
}

/** A handler wrapped so each invocation runs as its function. */
export function asFunction<A extends unknown[], R>(handler: HandlerName, fn: (...args: A) => R): (...args: A) => R {
  return (...args) => runAs(handler, () => fn(...args));
}

export interface IamUsage {
  /** Calls evaluated (made inside a function). */
  checked: number;
  denied: number;
  /** Per function: action to the resources it was used on. */
  used: Record<string, Record<string, string[]>>;
  /** The denied calls, for the report (at most a few). */
  refusals: string[];
}

/**
 * The IAM check every local stand-in calls before it acts. Calls made outside any function (a test
 * seeding the table, the runtime creating it) are not judged, as an operator's are not in AWS.
 */
export class IamEnforcement {
  checked = 0;
  denied = 0;
  readonly #used = new Map<string, Map<string, Set<string>>>();
  readonly #refusals: string[] = [];
  readonly #decisions = new Map<string, Decision>();

  constructor(private readonly policies: () => RolePolicies = rolePolicies) {}

  /** Throws AccessDeniedError when the running function's role may not make the call. */
  authorize(call: AwsCall): void {
    const handler = running.getStore();
    if (!handler) return;
    this.checked++;
    const fn = this.policies().functions[handler];
    const key = JSON.stringify([handler, call.action, call.resource, call.context ?? {}]);
    let decision = this.#decisions.get(key);
    if (!decision) {
      const request = { principal: fn.role, action: call.action, resource: call.resource, context: call.context ?? {} };
      const keyPolicy = call.action.startsWith('kms:') ? this.policies().keyPolicies[call.resource] : undefined;
      decision = keyPolicy ? evaluateWithKeyPolicy(fn.statements, keyPolicy, request) : evaluate(fn.statements, request);
      this.#decisions.set(key, decision);
    }
    if (decision !== 'Allowed') {
      this.denied++;
      const error = new AccessDeniedError(fn.role, handler, call, decision);
      if (this.#refusals.length < 20) this.#refusals.push(error.message);
      if (process.env.IAM_DEBUG) process.stderr.write(`IAM: ${error.message}\n`);
      throw error;
    }
    let actions = this.#used.get(handler);
    if (!actions) this.#used.set(handler, (actions = new Map()));
    let resources = actions.get(call.action);
    if (!resources) actions.set(call.action, (resources = new Set()));
    resources.add(call.resource);
  }

  /** Starts counting afresh (the benchmarks record each part's usage apart); decisions stay cached. */
  reset(): void {
    this.checked = 0;
    this.denied = 0;
    this.#used.clear();
    this.#refusals.length = 0;
  }

  usage(): IamUsage {
    const used: IamUsage['used'] = {};
    for (const [handler, actions] of this.#used) used[handler] = Object.fromEntries([...actions].map(([action, resources]) => [action, [...resources].sort()]));
    return { checked: this.checked, denied: this.denied, used, refusals: [...this.#refusals] };
  }
}

/** The process's enforcement: every local gateway in this process reports here. */
export const iamEnforcement = new IamEnforcement();

/**
 * Where this process's usage goes when IAM_USAGE_DIR is set (the test run's global setup and the
 * benchmarks set it): one file per process, rewritten whole, so a run's files add up to its usage.
 */
const fileName = `${process.pid}-${Math.random().toString(36).slice(2)}.json`;

export function saveIamUsage(): void {
  const dir = process.env.IAM_USAGE_DIR;
  if (!dir || iamEnforcement.checked === 0) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, fileName), JSON.stringify(iamEnforcement.usage()));
}
process.on('exit', saveIamUsage);

/** The KMS condition keys of a call with this encryption context. */
export function encryptionContextKeys(context: Readonly<Record<string, string>>): Record<string, Values> {
  const keys: Record<string, Values> = { 'kms:EncryptionContextKeys': Object.keys(context) };
  for (const [name, value] of Object.entries(context)) keys[`kms:EncryptionContext:${name}`] = value;
  return keys;
}
