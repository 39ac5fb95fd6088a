import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePortRun, userShellEnv } from '../support/free-ports';

/**
 * The README's "Try it" blocks, run as written, top to bottom, in one shell, against a fresh
 * `npm start` (bin/local.ts in a child process, on a random port, with its own LOCAL_DATA_DIR).
 * The shell gets only what a user sets for `npm start` (PORT, LOCAL_DATA_DIR), so the commands
 * must find the gateway and the sandbox keys themselves. Every command must answer without an
 * error; at the end, every connector the sandbox offers is healthy with the sandbox keys alone.
 */

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
// The README's commands need bash and curl (.ci/run installs curl where it is missing).
const hasShellTools = ['bash', 'curl'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0);
if (!hasShellTools) console.warn('README Try it test skipped: bash or curl not found (.ci/run installs curl).');

/** The ```sh blocks of every section whose heading starts with "Try it", in order. */
export function tryItBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let inTryIt = false;
  let block: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (block) {
      if (line.startsWith('```')) {
        blocks.push(block.join('\n'));
        block = undefined;
      } else block.push(line);
    } else if (/^#{1,6} /.test(line)) {
      inTryIt = /^#{1,6} Try it\b/.test(line);
    } else if (inTryIt && line.trim() === '```sh') {
      block = [];
    }
  }
  return blocks;
}

/** A block's commands: a line at the margin starts one, indented lines continue it; comments and blank lines separate. */
export function commandsOf(block: string): string[] {
  const commands: string[] = [];
  for (const line of block.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    if (/^\s/.test(line) && commands.length > 0) commands[commands.length - 1] += `\n${line}`;
    else commands.push(line);
  }
  return commands;
}

/** Why an answer is an error, or undefined: a problem document, a failed test, an unhealthy connection. */
function errorIn(output: string): string | undefined {
  let answer: unknown;
  try {
    answer = JSON.parse(output);
  } catch {
    return undefined;
  }
  if (typeof answer !== 'object' || answer === null) return undefined;
  const fields = answer as { type?: unknown; status?: unknown; ok?: unknown; health?: { state?: unknown }; connections?: Array<{ connector: string; health: { state: string } }> };
  if (typeof fields.type === 'string' && fields.type.includes(':problem:')) return `a problem (${String(fields.status)})`;
  if (fields.ok === false) return 'a failed test';
  if (fields.health?.state === 'degraded' || fields.health?.state === 'needs_reconnect') return `health ${String(fields.health.state)}`;
  const unhealthy = fields.connections?.filter((c) => c.health.state !== 'healthy');
  if (unhealthy?.length) return `unhealthy connections: ${unhealthy.map((c) => `${c.connector} ${c.health.state}`).join(', ')}`;
  return undefined;
}

/** One bash process for the whole session, so variables carry from command to command, as in a terminal. */
class Shell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private output = '';
  private waiting: ((text: string) => void) | undefined;
  private count = 0;

  constructor(
    private readonly scratch: string,
    env: Record<string, string>,
    cwd: string,
  ) {
    this.bash = spawn('bash', ['--noprofile', '--norc'], { env, cwd });
    this.bash.stdout.on('data', (data: Buffer) => {
      this.output += data.toString();
      const end = /\n?__DONE__ (\d+)\n$/.exec(this.output);
      if (end && this.waiting) {
        const text = this.output.slice(0, end.index) + `\n__rc=${end[1]}`;
        this.output = '';
        this.waiting(text);
      }
    });
    this.bash.stdin.write('exec 2>&1\n');
  }

  /** Runs one command (from a file, with no stdin of its own); answers its output and exit code. */
  run(command: string): Promise<{ output: string; code: number }> {
    const file = join(this.scratch, `command-${(this.count += 1)}.sh`);
    writeFileSync(file, `${command}\n`);
    return new Promise((resolve) => {
      this.waiting = (text) => {
        const at = text.lastIndexOf('\n__rc=');
        resolve({ output: text.slice(0, at).trim(), code: Number(text.slice(at + '\n__rc='.length)) });
      };
      this.bash.stdin.write(`source ${JSON.stringify(file)} < /dev/null; printf '\\n__DONE__ %d\\n' $?\n`);
    });
  }

  stop(): void {
    this.bash.stdin.end();
    this.bash.kill();
  }
}

describe.skipIf(!hasShellTools)('README: Try it, as written, against npm start', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-readme-'));
  const scratch = mkdtempSync(join(tmpdir(), 'gateway-readme-shell-'));
  let gateway: ReturnType<typeof spawn> | undefined;
  let shell: Shell;

  /** npm start as a user runs it, with only PORT and LOCAL_DATA_DIR set; the sandbox takes the next three ports. */
  async function npmStart(userEnv: Record<string, string>): Promise<{ started: boolean; output: string }> {
    gateway = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], { env: { ...userShellEnv(), ...userEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    gateway.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    gateway.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 60_000;
    while (!output.includes('sandbox keys to connect with')) {
      if (gateway.exitCode !== null) return { started: false, output };
      if (Date.now() > deadline) throw new Error(`npm start did not come up:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { started: true, output };
  }

  beforeAll(async () => {
    // Other test files (and other checkouts on this machine) take ports too: a lost race starts again elsewhere.
    for (let attempt = 1; ; attempt += 1) {
      const userEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), PORT: String(await freePortRun(4)), LOCAL_DATA_DIR: dataDir };
      const { started, output } = await npmStart(userEnv);
      if (started) {
        shell = new Shell(scratch, userEnv, process.cwd());
        return;
      }
      if (!output.includes('EADDRINUSE') || attempt === 3) throw new Error(`npm start did not come up:\n${output}`);
    }
  }, 90_000);

  afterAll(async () => {
    shell?.stop();
    if (gateway && gateway.exitCode === null) {
      const exited = new Promise((resolve) => gateway!.once('exit', resolve));
      gateway.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  const blocks = tryItBlocks(README);

  it('finds the Try it blocks, with the sandbox keys and the gateway address read by the commands themselves', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const text = blocks.join('\n');
    expect(text).toContain('sandbox-keys.json');
    expect(text).not.toMatch(/localhost:3000\//);
    expect(text).not.toMatch(/^\s*USER=/m);
    expect(text).not.toMatch(/<[^>]*>/);
  });

  it('every command of every block answers without an error, in order', async () => {
    const ran: string[] = [];
    for (const command of blocks.flatMap(commandsOf)) {
      const { output, code } = await shell.run(command);
      const context = `${command}\n→ ${output.slice(0, 600)}`;
      expect(code, context).toBe(0);
      expect(errorIn(output), context).toBeUndefined();
      // A variable set from an answer (a token, a key, a form) must hold something.
      const assigned = /^([A-Z_]+)=\$\(/.exec(command)?.[1];
      if (assigned) {
        const { output: value } = await shell.run(`printf '%s' "$${assigned}" | wc -c; [ "$${assigned}" != undefined ]`);
        expect(Number(value), `${assigned} is empty`).toBeGreaterThan(10);
      }
      ran.push(command);
    }
    expect(ran.length).toBeGreaterThan(10);
  });

  it('with the sandbox keys alone, every connector (billing, payment, data, messaging) is connected and healthy', async () => {
    const { output } = await shell.run('curl -s $GATEWAY/api/v1/accounts/acme/connections -H "authorization: Bearer $ACME"');
    const { connections } = JSON.parse(output) as { connections: Array<{ connector: string; health: { state: string } }> };
    expect(Object.fromEntries(connections.map((c) => [c.connector, c.health.state]))).toEqual({ billing: 'healthy', data: 'healthy', messaging: 'healthy', payment: 'healthy' });
    // What the sandbox wrote for the forms stays in LOCAL_DATA_DIR.
    const keys = JSON.parse(readFileSync(join(dataDir, 'sandbox-keys.json'), 'utf8')) as { data: { privateKeyFile: string } };
    expect(keys.data.privateKeyFile.startsWith(dataDir)).toBe(true);
  });
});
