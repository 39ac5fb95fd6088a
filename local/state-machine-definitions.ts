import { readFileSync } from 'node:fs';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';

export interface ConversationDefinitions {
  lifecycle: StateMachineDefinition;
  fleet: StateMachineDefinition;
}

type Template = { Resources: Record<string, { Type: string; Properties: { StateMachineName?: unknown; DefinitionString?: unknown } }> };

/** Where `npm run state-machines` writes the definitions the stack deploys, for the local runtime. */
export const DEFINITIONS_FILE = new URL('./conversation-state-machines.json', import.meta.url);

let cached: ConversationDefinitions | undefined;

/**
 * The conversation lifecycle and poller fleet definitions as the stack deploys them, read from
 * local/conversation-state-machines.json. That file is written from the synthesized template by
 * `npm run state-machines`, and test/infra/gateway-stack.test.ts fails when it differs from what
 * the stack synthesizes now, so the local runtime always runs the deployed ASL. (Synthesizing at
 * every start would cost seconds.)
 */
export function conversationDefinitions(): ConversationDefinitions {
  cached ??= JSON.parse(readFileSync(DEFINITIONS_FILE, 'utf8')) as ConversationDefinitions;
  return cached;
}

/**
 * Pure: the two definitions out of a synthesized template. Each DefinitionString is joined;
 * CloudFormation references and ARNs become `arn:local` (locally every Task runs a local handler
 * by state name), so the result does not depend on the stack's name, account or region.
 */
export function definitionsFromTemplate(template: Template): ConversationDefinitions {
  const machines = Object.values(template.Resources).filter((resource) => resource.Type === 'AWS::StepFunctions::StateMachine');
  const byName = (suffix: string) => {
    const machine = machines.find((m) => rendered(m.Properties.StateMachineName).endsWith(suffix));
    if (!machine) throw new Error(`no ${suffix} state machine in the synthesized template`);
    return withoutArns(JSON.parse(rendered(machine.Properties.DefinitionString))) as StateMachineDefinition;
  };
  return { lifecycle: byName('-conversation'), fleet: byName('-poller-fleet') };
}

function rendered(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'Fn::Join' in value) {
    const [separator, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
    return parts.map(rendered).join(separator);
  }
  return 'arn:ref';
}

function withoutArns(value: unknown): unknown {
  if (typeof value === 'string') return value.includes('arn:') ? 'arn:local' : value;
  if (Array.isArray(value)) return value.map(withoutArns);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutArns(v)]));
  return value;
}
