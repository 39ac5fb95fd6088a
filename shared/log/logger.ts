import { LogFormatter, LogItem, Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { currentLogContext } from './log-context';
import { redact, redactText } from './redaction';

type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Where log lines go: stdout in Lambda (CloudWatch reads it), a capture buffer in tests. */
export type LogSink = (line: string) => void;

let sink: LogSink = (line) => process.stdout.write(`${line}\n`);
let threshold: Level = readLevel(process.env.LOG_LEVEL);

function readLevel(value: string | undefined): Level {
  const level = value?.toLowerCase();
  return level === 'debug' || level === 'info' || level === 'warn' || level === 'error' ? level : 'info';
}

export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

export function setLogLevel(level: Level): void {
  threshold = level;
}

/**
 * Powertools' standard keys (level, message, timestamp, service, cold_start, function_name,
 * function_request_id, xray_trace_id), with one step added: the message and every other attribute
 * pass the redaction step before the line exists.
 */
class RedactingLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const lambda = attributes.lambdaContext;
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: redactText(attributes.message ?? ''),
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        cold_start: lambda?.coldStart,
        function_name: lambda?.functionName,
        function_request_id: lambda?.awsRequestId,
        xray_trace_id: attributes.xRayTraceId,
      },
    }).addAttributes(redact(additional) as LogAttributes);
  }
}

/** Powertools Logger, printing through the sink (so tests and the local runtime can read the lines). */
class SinkLogger extends PowertoolsLogger {
  protected override printLog(_level: number, item: LogItem): void {
    item.prepareForPrint();
    sink(JSON.stringify(item.getAttributes()));
  }
}

/**
 * The process's one Powertools logger. Its level is DEBUG: the gateway's `Logger` below filters
 * by LOG_LEVEL first, so a line it drops costs no formatting at all.
 */
export const powertoolsLogger = new SinkLogger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'integration-gateway',
  logLevel: 'DEBUG',
  logFormatter: new RedactingLogFormatter(),
});

/**
 * Structured JSON logger (Powertools Logger underneath). Every line carries the invocation's log
 * context (request id, account id: see log-context.ts and shared/handler/log-context.ts), the
 * context it was created with (`with`), and passes through `redact`, so no secret can be logged by
 * mistake.
 */
export class Logger {
  constructor(private readonly context: Record<string, unknown> = {}) {}

  with(extra: Record<string, unknown>): Logger {
    return new Logger({ ...this.context, ...extra });
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    if (LEVELS.debug >= LEVELS[threshold]) powertoolsLogger.debug(message, this.attributes(fields));
  }
  info(message: string, fields?: Record<string, unknown>): void {
    if (LEVELS.info >= LEVELS[threshold]) powertoolsLogger.info(message, this.attributes(fields));
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    if (LEVELS.warn >= LEVELS[threshold]) powertoolsLogger.warn(message, this.attributes(fields));
  }
  error(message: string, fields?: Record<string, unknown>): void {
    if (LEVELS.error >= LEVELS[threshold]) powertoolsLogger.error(message, this.attributes(fields));
  }

  private attributes(fields: Record<string, unknown> | undefined): Record<string, unknown> {
    return { ...currentLogContext(), ...this.context, ...fields };
  }
}

export const log = new Logger();
