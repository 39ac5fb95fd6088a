import { App, Stack } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { Conversations } from '../lib/conversations';

export interface ConversationDefinitions {
  lifecycle: StateMachineDefinition;
  fleet: StateMachineDefinition;
}

let cached: ConversationDefinitions | undefined;

/**
 * The conversation lifecycle and poller fleet definitions exactly as the stack deploys them: the
 * CDK construct (lib/conversations.ts) is synthesized (no bundling) and each state machine's
 * DefinitionString is read from the template. Resource ARNs (CloudFormation references) become
 * placeholders: locally every Task runs a local handler by state name.
 */
export function conversationDefinitions(): ConversationDefinitions {
  if (cached) return cached;
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'LocalConversations', { env: { account: '000000000000', region: 'us-east-1' } });
  new Conversations(stack, 'Conversations', { logRetention: logs.RetentionDays.ONE_WEEK, scheduleDeadLetterQueue: new sqs.Queue(stack, 'Dlq') });
  const template = app.synth().getStackByName('LocalConversations').template as { Resources: Record<string, { Type: string; Properties: { StateMachineName?: unknown; DefinitionString?: unknown } }> };
  const machines = Object.values(template.Resources).filter((resource) => resource.Type === 'AWS::StepFunctions::StateMachine');
  const byName = (suffix: string) => {
    const machine = machines.find((m) => rendered(m.Properties.StateMachineName).endsWith(suffix));
    if (!machine) throw new Error(`no ${suffix} state machine in the synthesized template`);
    return JSON.parse(rendered(machine.Properties.DefinitionString)) as StateMachineDefinition;
  };
  cached = { lifecycle: byName('-conversation'), fleet: byName('-poller-fleet') };
  return cached;
}

/** A CloudFormation string value with its references replaced by placeholders. */
function rendered(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'Fn::Join' in value) {
    const [separator, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
    return parts.map(rendered).join(separator);
  }
  // Ref, Fn::GetAtt, AWS::Partition...: an ARN-shaped placeholder.
  return 'arn:aws:lambda:us-east-1:000000000000:function:local';
}
