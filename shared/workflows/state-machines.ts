import { SendTaskSuccessCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { GatewayEnvironment } from '../config';

/**
 * The gateway's state machines as handlers use them: start a conversation's lifecycle or the
 * poller fleet, and answer a lifecycle's task token. In AWS this is Step Functions; locally the
 * same definitions run in a States Language interpreter (local/local-state-machines.ts).
 */
export interface StateMachines {
  /** One execution per conversation; `name` makes a repeated start a no-op. */
  startLifecycle(name: string, input: Record<string, unknown>): Promise<void>;
  startFleet(input: Record<string, unknown>): Promise<void>;
  sendTaskSuccess(taskToken: string, output: Record<string, unknown>): Promise<void>;
}

export class StepFunctionsStateMachines implements StateMachines {
  constructor(
    private readonly client: SFNClient,
    private readonly arns: { lifecycle?: string; fleet?: string },
  ) {}

  async startLifecycle(name: string, input: Record<string, unknown>): Promise<void> {
    try {
      await this.client.send(new StartExecutionCommand({ stateMachineArn: required(this.arns.lifecycle, 'CONVERSATION_STATE_MACHINE_ARN'), name, input: JSON.stringify(input) }));
    } catch (error) {
      // Same name, same input: Step Functions answers with the running execution, not an error; a
      // different input under the same name is a real conflict and propagates.
      if (!(error instanceof Error && error.name === 'ExecutionAlreadyExists')) throw error;
    }
  }

  async startFleet(input: Record<string, unknown>): Promise<void> {
    await this.client.send(new StartExecutionCommand({ stateMachineArn: required(this.arns.fleet, 'POLLER_FLEET_STATE_MACHINE_ARN'), input: JSON.stringify(input) }));
  }

  async sendTaskSuccess(taskToken: string, output: Record<string, unknown>): Promise<void> {
    await this.client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
  }
}

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is not set for this function`);
  return value;
}

/** For `provideAwsServices({ stateMachines: stepFunctionsStateMachines })`. */
export function stepFunctionsStateMachines(env: GatewayEnvironment): StateMachines {
  return new StepFunctionsStateMachines(new SFNClient({}), { lifecycle: env.CONVERSATION_STATE_MACHINE_ARN, fleet: env.POLLER_FLEET_STATE_MACHINE_ARN });
}
