import { readFileSync } from 'node:fs';
import { handlerNames, type HandlerName } from '../../shared/handler/function-settings';
import { LOCAL_ACCOUNT, LOCAL_REGION, LOCAL_RESOURCES, localRoleArn } from './local-arns';
import type { PolicyStatement } from './policy-evaluation';

/** What each function's role may do, and the credentials key's own policy, with local ARNs. */
export interface RolePolicies {
  functions: Record<HandlerName, { role: string; statements: PolicyStatement[] }>;
  /** Key policies by the key's local ARN. */
  keyPolicies: Record<string, PolicyStatement[]>;
}

/** Where `npm run iam-policies` writes them from the synthesized template. */
export const ROLE_POLICIES_FILE = new URL('./role-policies.json', import.meta.url);

let cached: RolePolicies | undefined;

/**
 * The policies as the stack deploys them, read once per process from local/iam/role-policies.json.
 * That file is written from the synthesized template by `npm run iam-policies`, and
 * test/infra/gateway-stack.test.ts fails when it differs from what the stack synthesizes now
 * (synthesizing at every start would cost 10-45 s here).
 */
export function rolePolicies(): RolePolicies {
  cached ??= JSON.parse(readFileSync(ROLE_POLICIES_FILE, 'utf8')) as RolePolicies;
  return cached;
}

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}
export interface Template {
  Resources: Record<string, TemplateResource>;
}

/** Pure: each function's statements and the KMS key policies out of a synthesized template, with local ARNs. */
export function policiesFromTemplate(template: Template, paths: Record<string, string>, stackName = 'IntegrationGateway'): RolePolicies {
  const resources = template.Resources;
  const roleOfHandler = new Map<string, HandlerName>();
  for (const handler of handlerNames) {
    const fn = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && String(r.Properties?.Description).startsWith(`functions/${handler}.ts:`),
    );
    if (!fn) throw new Error(`no function runs functions/${handler}.ts in the template`);
    roleOfHandler.set((fn.Properties!.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0], handler);
  }
  const resolve = resolver(paths, roleOfHandler, stackName);
  const functions = Object.fromEntries(handlerNames.map((h) => [h, { role: localRoleArn(h), statements: [] as PolicyStatement[] }])) as RolePolicies['functions'];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const document = resource.Properties!.PolicyDocument as { Statement: unknown[] };
    for (const role of resource.Properties!.Roles as Array<{ Ref: string }>) {
      const handler = roleOfHandler.get(role.Ref);
      if (handler) functions[handler].statements.push(...(resolve(document.Statement) as PolicyStatement[]));
    }
  }
  const keyPolicies: Record<string, PolicyStatement[]> = {};
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::KMS::Key') continue;
    const arn = resolve({ 'Fn::GetAtt': [id, 'Arn'] }) as string;
    keyPolicies[arn] = resolve((resource.Properties!.KeyPolicy as { Statement: unknown[] }).Statement) as PolicyStatement[];
  }
  return { functions, keyPolicies };
}

/** Turns CloudFormation intrinsics into local values: ARNs of the stand-ins, the local account and region. */
function resolver(paths: Record<string, string>, roleOfHandler: Map<string, HandlerName>, stackName: string): (value: unknown) => unknown {
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': LOCAL_REGION,
    'AWS::AccountId': LOCAL_ACCOUNT,
    'AWS::StackName': stackName,
    'AWS::URLSuffix': 'amazonaws.com',
  };
  const arnOf = (id: string): string => {
    const handler = roleOfHandler.get(id);
    if (handler) return localRoleArn(handler);
    const local = LOCAL_RESOURCES[paths[id] ?? ''];
    if (local) return local;
    // Resources with no stand-in (log groups, other roles): an ARN no local call names.
    return `arn:aws:cloudformation:${LOCAL_REGION}:${LOCAL_ACCOUNT}:resource/${id}`;
  };
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (!value || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    if ('Ref' in object) {
      const name = String(object.Ref);
      if (pseudo[name]) return pseudo[name];
      // A state machine's Ref is its ARN; nothing else the policies hold is referenced by Ref.
      return arnOf(name);
    }
    if ('Fn::GetAtt' in object) return arnOf((object['Fn::GetAtt'] as [string, string])[0]);
    if ('Fn::Join' in object) {
      const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
      return parts.map((part) => String(resolve(part))).join(separator);
    }
    return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolve(v)]));
  };
  return resolve;
}

