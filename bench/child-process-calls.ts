import { fork, type ChildProcess } from 'node:child_process';

/**
 * A benchmark's platform simulator in its own process (a platform is another machine: its bursts
 * must not block the gateway's event loop), driven over the IPC channel with request/answer calls.
 * The parent holds a `ChildProcessCalls`; the child module calls `answerCalls` with its handler.
 * Used by bench/conversations-world.ts (the CRM) and bench/sync-platforms.ts (payment and billing).
 */
export class ChildProcessCalls<Call> {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();

  /** `module`: the child's file; it inherits this process's loader (tsx) through execArgv. */
  constructor(module: URL) {
    this.child = fork(module, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (message: { id: number; result?: unknown; error?: string }) => {
      const waiting = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error !== undefined) waiting?.reject(new Error(`simulator process: ${message.error}`));
      else waiting?.resolve(message.result);
    });
    this.child.on('exit', () => {
      for (const waiting of this.waiting.values()) waiting.reject(new Error('simulator process exited'));
      this.waiting.clear();
    });
  }

  /** The child's process id (benchmarks read its CPU time). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  call(call: Call): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, call });
    });
  }

  /** Sends the child its stop call (it exits after answering), then ends it. */
  async stop(call: Call): Promise<void> {
    await this.call(call).catch(() => undefined);
    this.child.kill();
  }
}

/** The child's side: answers each call with the handler's result (or its error's message). */
export function answerCalls<Call>(handle: (call: Call) => Promise<unknown>): void {
  process.on('message', (message: { id: number; call: Call }) => {
    handle(message.call).then(
      (result) => process.send!({ id: message.id, result }),
      (error: unknown) => process.send!({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
