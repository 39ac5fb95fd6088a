import { createServer } from 'node:net';

/**
 * A run of `count` consecutive loopback ports free right now (npm start takes PORT and the next
 * three for its simulators, so the OS's port 0 does not fit). Tests on this shared machine run
 * side by side, so a port is checked, not guessed; a start that still loses the race retries.
 */
export async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 10_000) * 4;
    if (await allFree(base, count)) return base;
  }
  throw new Error(`no run of ${count} free ports found`);
}

async function allFree(base: number, count: number): Promise<boolean> {
  for (let port = base; port < base + count; port += 1) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!free) return false;
  }
  return true;
}

/**
 * This process's environment as a user's shell would have it: vitest adds Vite's own variables
 * (BASE_URL, MODE, DEV, PROD, SSR), and BASE_URL means the gateway's public address to the gateway.
 */
export function userShellEnv(): NodeJS.ProcessEnv {
  const { BASE_URL: _base, MODE: _mode, DEV: _dev, PROD: _prod, SSR: _ssr, ...env } = process.env;
  return env;
}
