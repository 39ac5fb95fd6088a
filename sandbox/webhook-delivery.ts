/**
 * Webhook delivery as the platforms do it: POST, any 2xx is success, anything else (or no
 * answer) is retried after a growing delay; the same event may also arrive more than once.
 */
export interface DeliveryOptions {
  /** Extra deliveries of the same event after the first (the platforms do send duplicates). Default 0. */
  duplicates?: number;
  /** Further attempts after a non-2xx or network failure, per delivery. Default 3. */
  retries?: number;
  /** Delay before the first retry; doubles on each further retry. Default 20 ms (the platforms wait hours). */
  retryDelayMs?: number;
  /** Per-attempt timeout. Default 5 s. */
  timeoutMs?: number;
}

/** One delivery attempt: answers the HTTP status, or 0 when the receiver could not be reached. */
export type DeliveryAttempt = () => Promise<number>;

/** Runs the attempts and answers every status received, in order (0 = no answer). */
export async function deliverWithRetries(attempt: DeliveryAttempt, options: DeliveryOptions): Promise<number[]> {
  const duplicates = options.duplicates ?? 0;
  const retries = options.retries ?? 3;
  const retryDelayMs = options.retryDelayMs ?? 20;
  const statuses: number[] = [];
  for (let copy = 0; copy <= duplicates; copy += 1) {
    for (let retry = 0; ; retry += 1) {
      const status = await attempt();
      statuses.push(status);
      if ((status >= 200 && status < 300) || retry >= retries) break;
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs * 2 ** retry));
    }
  }
  return statuses;
}

/** POSTs a body exactly as given (signatures cover these bytes) and answers the status or 0. */
export async function postWebhook(url: string, body: string, headers: Record<string, string>, timeoutMs = 5_000): Promise<number> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}
