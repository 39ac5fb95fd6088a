/**
 * Starts the sandbox simulators for every platform whose real address is not configured, and
 * returns the environment that points the gateway at them.
 */
export interface RunningSandbox {
  env: Record<string, string>;
  summary: string[];
  stop(): Promise<void>;
}

export async function startSandbox(_env: NodeJS.ProcessEnv, _dataDir: string): Promise<RunningSandbox> {
  return { env: {}, summary: ['Sandbox: the simulators are being added.'], stop: async () => {} };
}
