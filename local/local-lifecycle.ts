import { randomUUID } from 'node:crypto';

/** What the lifecycle hands each step, as the state machine in lib/conversations.ts does. */
export type LifecycleStep =
  | { step: 'start' | 'transcript'; input: Record<string, unknown> }
  | { step: 'await-end'; taskToken: string; input: Record<string, unknown> }
  | { step: 'mark-failed'; input: Record<string, unknown> };

export type LifecycleTask = (event: LifecycleStep) => Promise<unknown>;

export interface LifecycleExecution {
  executionId: string;
  status: 'running' | 'succeeded' | 'failed';
  /** The steps run, in order. */
  steps: LifecycleStep['step'][];
  error?: string;
}

interface Waiting {
  resolve(output: unknown): void;
  reject(error: Error): void;
}

/** A step's failure as Step Functions records it under `$.error`. */
const asError = (error: unknown) => ({ Error: error instanceof Error ? error.name : 'Error', Cause: error instanceof Error ? error.message : String(error) });

/**
 * The conversation lifecycle state machine, run locally: Start → Active (waits on a task token
 * until the conversation ends, or a day passes) → Ended → Transcript, and Mark failed on any
 * failure. The same handler (functions/conversation-task.ts) runs each step, with the same
 * payloads, so `npm start` and the tests drive the lifecycle exactly as AWS does.
 */
export class LocalConversationLifecycle {
  private readonly executions = new Map<string, LifecycleExecution>();
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly task: LifecycleTask,
    /** How long Active waits before a silent conversation counts as ended (the state machine: 24 h). */
    private readonly activeTimeoutMs = 24 * 60 * 60 * 1000,
  ) {}

  /** Starts an execution; resolves with its id at once, as StartExecution does. */
  start(input: Record<string, unknown>): string {
    const execution: LifecycleExecution = { executionId: randomUUID(), status: 'running', steps: [] };
    this.executions.set(execution.executionId, execution);
    void this.run(execution, { ...input });
    return execution.executionId;
  }

  /** SendTaskSuccess: the conversation ended; `output` lands in `$.end`. */
  sendTaskSuccess(taskToken: string, output: unknown): void {
    this.settle(taskToken).resolve(output);
  }

  /** SendTaskFailure: the conversation failed; the lifecycle marks it failed. */
  sendTaskFailure(taskToken: string, error: string, cause?: string): void {
    const failure = new Error(cause ?? error);
    failure.name = error;
    this.settle(taskToken).reject(failure);
  }

  describe(executionId: string): LifecycleExecution | undefined {
    const execution = this.executions.get(executionId);
    return execution && { ...execution, steps: [...execution.steps] };
  }

  /** Resolves when the execution has finished (tests). */
  async finished(executionId: string): Promise<LifecycleExecution> {
    while (this.executions.get(executionId)?.status === 'running') await new Promise((resolve) => setTimeout(resolve, 5));
    return this.describe(executionId)!;
  }

  private settle(taskToken: string): Waiting {
    const waiting = this.waiting.get(taskToken);
    // As Step Functions answers TaskDoesNotExist / TaskTimedOut for an unknown or spent token.
    if (!waiting) throw Object.assign(new Error('Task token not found or already used'), { name: 'TaskDoesNotExist' });
    this.waiting.delete(taskToken);
    return waiting;
  }

  private async run(execution: LifecycleExecution, state: Record<string, unknown>): Promise<void> {
    const step = async (event: LifecycleStep) => {
      execution.steps.push(event.step);
      return this.task(event);
    };
    try {
      try {
        await step({ step: 'start', input: state });
        state.end = await this.active(step, state);
        // Ended (a Pass state), then the transcript.
        await step({ step: 'transcript', input: state });
        execution.status = 'succeeded';
      } catch (error) {
        state.error = asError(error);
        await step({ step: 'mark-failed', input: state });
        execution.status = 'failed';
        execution.error = (state.error as { Cause: string }).Cause;
      }
    } catch (markFailedError) {
      execution.status = 'failed';
      execution.error = asError(markFailedError).Cause;
    }
  }

  /** Active: hands the step a task token and waits for it to come back; a day of silence is an end too. */
  private async active(step: (event: LifecycleStep) => Promise<unknown>, state: Record<string, unknown>): Promise<unknown> {
    const taskToken = randomUUID();
    const ended = new Promise<unknown>((resolve, reject) => this.waiting.set(taskToken, { resolve, reject }));
    await step({ step: 'await-end', taskToken, input: state });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<unknown>((resolve) => {
      timer = setTimeout(() => {
        this.waiting.delete(taskToken);
        resolve({ Error: 'States.Timeout', Cause: 'the conversation was silent for the whole Active timeout' });
      }, this.activeTimeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([ended, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
