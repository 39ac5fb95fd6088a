import { redact } from './redaction';

type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Where log lines go: stdout in Lambda (CloudWatch reads it), a capture buffer in tests. */
export type LogSink = (line: string) => void;

let sink: LogSink = (line) => process.stdout.write(`${line}\n`);
let threshold: Level = (process.env.LOG_LEVEL as Level | undefined) ?? 'info';

export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

export function setLogLevel(level: Level): void {
  threshold = level;
}

/**
 * Structured JSON logger. Every line carries the context it was created with (request id,
 * account id, connector...) and passes through `redact`, so no secret can be logged by mistake.
 */
export class Logger {
  constructor(private readonly context: Record<string, unknown> = {}) {}

  with(extra: Record<string, unknown>): Logger {
    return new Logger({ ...this.context, ...extra });
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.write('debug', message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.write('info', message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.write('warn', message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.write('error', message, fields);
  }

  private write(level: Level, message: string, fields?: Record<string, unknown>): void {
    if (LEVELS[level] < LEVELS[threshold]) return;
    const line = redact({ time: new Date().toISOString(), level, message, ...this.context, ...fields });
    sink(JSON.stringify(line));
  }
}

export const log = new Logger({ service: 'integration-gateway' });
