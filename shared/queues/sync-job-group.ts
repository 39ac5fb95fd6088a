/**
 * A sync job's FIFO message group: its connection and data object (one job of an object at a time,
 * in order). A module of its own so the SQS queue, which every sending function loads, names the
 * group without loading the queue messages' schemas (messages.ts).
 */
export function syncJobGroup(job: { accountId: string; connector: string; object: string }): string {
  return `${job.accountId}#${job.connector}#${job.object}`;
}
