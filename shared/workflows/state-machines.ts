import type { SendTaskSuccessInput, StartExecutionInput } from '@aws-sdk/client-sfn';
import { STEP_FUNCTIONS, signedCall } from '../aws/signed-call';
import type { GatewayEnvironment } from '../config';

/**
 * The gateway's state machines as handlers use them: start a conversation's lifecycle or the
 * poller fleet, and answer a lifecycle's task token. In AWS this is Step Functions (signed calls,
 * shared/aws/signed-call.ts); locally the same definitions run in a States Language interpreter
 * (local/local-state-machines.ts).
 */
export interface StateMachines {
  /** One execution per conversation; `name` makes a repeated start a no-op. */
  startLifecycle(name: string, input: Record<string, unknown>): Promise<void>;
  startFleet(input: Record<string, unknown>): Promise<void>;
  sendTaskSuccess(taskToken: string, output: Record<string, unknown>): Promise<void>;
}

export class StepFunctionsStateMachines implements StateMachines {
  constructor(private readonly arns: { lifecycle?: string; fleet?: string }) {}

  async startLifecycle(name: string, input: Record<string, unknown>): Promise<void> {
    try {
      await startExecution({ stateMachineArn: required(this.arns.lifecycle, 'CONVERSATION_STATE_MACHINE_ARN'), name, input: JSON.stringify(input) });
    } catch (error) {
      // The name is the conversation's: Step Functions answers a repeat of a running execution with
      // it, and ExecutionAlreadyExists when that execution has ended or the input differs. Either
      // way this conversation's lifecycle was started once: a repeated start is a no-op.
      if (!(error instanceof Error && error.name === 'ExecutionAlreadyExists')) throw error;
    }
  }

  async startFleet(input: Record<string, unknown>): Promise<void> {
    await startExecution({ stateMachineArn: required(this.arns.fleet, 'POLLER_FLEET_STATE_MACHINE_ARN'), input: JSON.stringify(input) });
  }

  async sendTaskSuccess(taskToken: string, output: Record<string, unknown>): Promise<void> {
    await signedCall(STEP_FUNCTIONS, 'SendTaskSuccess', { taskToken, output: JSON.stringify(output) } satisfies SendTaskSuccessInput);
  }
}

const startExecution = (input: StartExecutionInput) => signedCall(STEP_FUNCTIONS, 'StartExecution', input);

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is not set for this function`);
  return value;
}

/** For `provideAwsServices({ stateMachines: stepFunctionsStateMachines })`. */
export function stepFunctionsStateMachines(env: GatewayEnvironment): StateMachines {
  return new StepFunctionsStateMachines({ lifecycle: env.CONVERSATION_STATE_MACHINE_ARN, fleet: env.POLLER_FLEET_STATE_MACHINE_ARN });
}
