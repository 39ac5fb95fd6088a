/**
 * Granted actions no local run makes, each with why it is granted anyway. `npm run bench -- iam`
 * reports every other unused grant as a finding (`iam.unused_actions`).
 */
export interface AllowedUnused {
  /** The action (IAM wildcards allowed). */
  action: string;
  /** The functions it applies to ('*': any). */
  handlers: readonly string[] | '*';
  reason: string;
}

export const UNUSED_ALLOW_LIST: readonly AllowedUnused[] = [
  {
    action: 'xray:Put*',
    handlers: '*',
    reason: 'Active tracing: the Lambda service sends the trace segments with the role; no handler code calls X-Ray.',
  },
  {
    action: 'logs:*',
    handlers: '*',
    reason: "The Lambda runtime writes the function's log stream with the role; no handler code calls CloudWatch Logs.",
  },
  {
    action: 'sqs:GetQueue*',
    handlers: ['webhook-event', 'sync-job', 'ingest'],
    reason: "CDK's SqsEventSource grants them (grantConsumeMessages) for Lambda's poller, which reads the queue's attributes with the consumer's role.",
  },
  {
    action: 'sqs:ChangeMessageVisibility',
    handlers: ['webhook-event', 'ingest'],
    reason: "CDK's SqsEventSource grants it (grantConsumeMessages) for Lambda's poller; these consumers report failures in the batch response instead.",
  },
];

export function allowedUnused(handler: string, action: string, matches: (pattern: string, value: string) => boolean): AllowedUnused | undefined {
  return UNUSED_ALLOW_LIST.find((entry) => (entry.handlers === '*' || entry.handlers.includes(handler)) && matches(entry.action, action));
}
