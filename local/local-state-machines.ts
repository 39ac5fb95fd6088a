import { randomUUID } from 'node:crypto';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { StateMachines } from '../shared/workflows/state-machines';
import type { PollerRun, PollerStats } from '../shared/messaging/poller';
import { conversationDefinitions } from './state-machine-definitions';

type Json = Parameters<StateMachine['run']>[0];
type Handler = (payload: unknown) => Promise<unknown>;

export interface LocalStateMachineHandlers {
  conversationTask: Handler;
  fleetPlan: Handler;
  /** Runs a poller; `onStart` hands the run over so tests and benchmarks can kill it. */
  poller: (payload: unknown, onStart: (run: PollerRun) => void) => Promise<unknown>;
}

export interface LocalExecution {
  id: string;
  machine: 'lifecycle' | 'fleet';
  status: 'running' | 'succeeded' | 'failed';
  output?: unknown;
  error?: string;
}

/**
 * The gateway's two state machines run in process by a States Language interpreter
 * (aws-local-stepfunctions) on the definitions the stack deploys (state-machine-definitions.ts).
 * Each Task state runs the Lambda handler it invokes in AWS, with the payload the definition
 * builds, answered as Lambda's invoke would be (`{Payload}`); the lifecycle's task-token wait
 * resolves when a handler calls `sendTaskSuccess`, as in Step Functions.
 */
export class LocalStateMachines implements StateMachines {
  private readonly lifecycle: StateMachine;
  private readonly fleet: StateMachine;
  private readonly executions = new Map<string, LocalExecution & { result: Promise<unknown> }>();
  private readonly tokens = new Map<string, { resolve(output: unknown): void; reject(error: Error): void }>();
  private readonly running = new Set<PollerRun>();
  /** Figures of every poller run that ended (benchmarks read the handover gaps from them). */
  readonly finishedPollers: PollerStats[] = [];
  private readonly aborts = new Set<() => void>();
  /** Handler calls in progress: shutting down waits for them, so none writes to a closed table. */
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly handlers: LocalStateMachineHandlers;

  constructor(handlers: LocalStateMachineHandlers, definitions = conversationDefinitions()) {
    const tracked = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
      const call = fn(...args);
      this.inflight.add(call);
      void call.catch(() => undefined).finally(() => this.inflight.delete(call));
      return call;
    };
    this.handlers = { conversationTask: tracked(handlers.conversationTask), fleetPlan: tracked(handlers.fleetPlan), poller: tracked(handlers.poller) };
    const options = { validationOptions: { checkArn: false } };
    this.lifecycle = new StateMachine(definitions.lifecycle, options);
    this.fleet = new StateMachine(definitions.fleet, options);
  }

  static definitions(): { lifecycle: StateMachineDefinition; fleet: StateMachineDefinition } {
    return conversationDefinitions();
  }

  private stopped = false;

  async startLifecycle(name: string, input: Record<string, unknown>): Promise<void> {
    if (this.stopped) return;
    // Same name: the execution that runs already (Step Functions answers the same for the same input).
    if (this.executions.has(`lifecycle:${name}`)) return;
    const token = randomUUID();
    const waited = new Promise<unknown>((resolve, reject) => this.tokens.set(token, { resolve, reject }));
    waited.catch(() => undefined);
    const invoke = (payload: unknown) => this.handlers.conversationTask(payload).then(lambdaAnswer);
    this.start('lifecycle', `lifecycle:${name}`, this.lifecycle, input, {
      context: { Execution: { Id: `local:conversation:${name}` }, Task: { Token: token } },
      overrides: {
        taskResourceLocalHandlers: {
          Start: (params: Json) => invoke(payloadOf(params)),
          Transcript: (params: Json) => invoke(payloadOf(params)),
          'Mark failed': (params: Json) => invoke(payloadOf(params)),
          Active: async (params: Json) => {
            await this.handlers.conversationTask(payloadOf(params));
            return (await waited) as Json;
          },
        },
      },
    });
  }

  async startFleet(input: Record<string, unknown>): Promise<void> {
    if (this.stopped) return;
    const id = `fleet:${randomUUID()}`;
    const poll = async (params: Json) => {
      // Shutting down: no new poller starts (a Map that was already running would start one).
      if (this.stopped) return lambdaAnswer({});
      let started: PollerRun | undefined;
      try {
        return lambdaAnswer(
          await this.handlers.poller(payloadOf(params), (run) => {
            started = run;
            this.running.add(run);
            if (this.stopped) run.kill();
          }),
        );
      } finally {
        if (started) {
          this.running.delete(started);
          this.finishedPollers.push(started.stats);
        }
      }
    };
    this.start('fleet', id, this.fleet, input, {
      context: { Execution: { Id: `local:poller-fleet:${id}` } },
      overrides: {
        taskResourceLocalHandlers: {
          Plan: async (params: Json) => lambdaAnswer(await this.handlers.fleetPlan(payloadOf(params))),
          'Poll shard': poll,
          'Surge poller': poll,
          'Hand over': async (params: Json) => {
            const parameters = params as { Input?: Record<string, unknown> };
            await this.startFleet(parameters.Input ?? {});
            return {};
          },
        },
        // The definition's retry waits are seconds long in AWS; locally a restarted poller starts at once.
        retryIntervalOverrides: { 'Poll shard': 0 },
      },
    });
  }

  async sendTaskSuccess(taskToken: string, output: Record<string, unknown>): Promise<void> {
    this.settle(taskToken).resolve(output);
  }

  /** Poller runs in progress (tests and benchmarks kill one to show its leases lapse). */
  pollers(): PollerRun[] {
    return [...this.running];
  }

  list(machine?: 'lifecycle' | 'fleet'): LocalExecution[] {
    return [...this.executions.values()].filter((e) => !machine || e.machine === machine).map(({ result: _r, ...e }) => ({ ...e }));
  }

  /** Resolves when every execution started so far (and any they start) has finished. */
  async idle(timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while ([...this.executions.values()].some((e) => e.status === 'running')) {
      if (Date.now() > until) throw new Error('local state machines still running');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Stops every execution (the local runtime shuts down): pollers first, as a crash would, then the rest. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    for (const run of this.running) run.kill();
    const until = Date.now() + 2_000;
    while (this.running.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    for (const abort of this.aborts) abort();
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((resolve) => setTimeout(resolve, 2_000))]);
  }

  private settle(taskToken: string) {
    const waiting = this.tokens.get(taskToken);
    if (!waiting) throw Object.assign(new Error('Task token not found or already used'), { name: 'TaskDoesNotExist' });
    this.tokens.delete(taskToken);
    return waiting;
  }

  private start(machine: 'lifecycle' | 'fleet', id: string, stateMachine: StateMachine, input: Record<string, unknown>, options: Parameters<StateMachine['run']>[1]): void {
    const execution = stateMachine.run(input as Json, { ...options, noThrowOnAbort: true });
    const record: LocalExecution & { result: Promise<unknown> } = { id, machine, status: 'running', result: execution.result };
    this.executions.set(id, record);
    this.aborts.add(execution.abort);
    execution.result.then(
      (output) => {
        record.status = 'succeeded';
        record.output = output;
      },
      (error: unknown) => {
        record.status = 'failed';
        record.error = error instanceof Error ? error.message : String(error);
      },
    ).finally(() => this.aborts.delete(execution.abort));
  }
}

/** What Lambda's invoke answers: the function's output under `Payload`. */
function lambdaAnswer(output: unknown): Json {
  return { Payload: (output ?? {}) as Json, StatusCode: 200 };
}

/** A LambdaInvoke task's Parameters carry the function's payload under `Payload`. */
function payloadOf(params: Json): unknown {
  return params && typeof params === 'object' && !Array.isArray(params) && 'Payload' in params ? params.Payload : params;
}
