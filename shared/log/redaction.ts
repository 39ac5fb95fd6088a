/**
 * The redaction step every log line, error body and event passes through.
 *
 * Three nets, so that no secret gets out even when a new field is added carelessly:
 * 1. every secret the vault seals or opens is registered here and scrubbed wherever it appears;
 * 2. fields whose names say "secret" are replaced whatever their value;
 * 3. values shaped like platform secrets (keys, bearer/basic credentials, PEM blocks, JWTs) are scrubbed.
 */
export const REDACTED = '[redacted]';

const registered = new Set<string>();
/** Values shorter than this are too likely to occur by chance to scrub everywhere. */
const MIN_REGISTERED_LENGTH = 8;
/**
 * A warm function that opened many connections forgets the oldest secrets past this many (each log
 * line is checked against all of them); the field-name and shape nets below still apply to those.
 */
const MAX_REGISTERED = 5_000;

export function registerSecret(value: string): void {
  if (value.length < MIN_REGISTERED_LENGTH || registered.has(value)) return;
  if (registered.size >= MAX_REGISTERED) registered.delete(registered.values().next().value!);
  registered.add(value);
}

export function knownSecrets(): ReadonlySet<string> {
  return registered;
}

const SECRET_FIELD = /(secret|password|passwd|token|api[-_]?key|private[-_]?key|certificate|authorization|credential|cookie|signature|assertion|code[-_]?verifier)/i;
/** Field names that match the pattern above but hold no secret. */
const PUBLIC_FIELDS = new Set(['tokenType', 'token_type', 'maskedSecrets', 'webhookSigningSecretSet', 'keyId']);

const SECRET_SHAPES: RegExp[] = [
  // Platforms echo keys back partly masked ("Invalid API Key provided: sk_test_***1234"): `*` too.
  /\b(sk|rk|pk)_(live|test)_[0-9A-Za-z*]{4,}/g,
  /\bwhsec_[0-9A-Za-z+/=*]{4,}/g,
  // The gateway's own playbook API keys (igk_<account>_<key id>_<secret>), whole: a malformed one may still be a real key cut short.
  /\bigk_[A-Za-z0-9_*-]{8,}/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  // `!` appears in the identity service's access tokens (`00D...!AQ...`).
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=!-]{8,}/gi,
  /\b00D[A-Za-z0-9]{12,15}![A-Za-z0-9._-]{20,}/g,
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
];

export function redactText(text: string): string {
  let out = text;
  for (const secret of registered) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  for (const shape of SECRET_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/** Returns a deep copy of `value` with every secret removed. Handles cycles and errors. */
export function redact(value: unknown, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[circular]';
  seen.add(value);
  if (value instanceof Error) {
    return { name: value.name, message: redactText(value.message), ...(redact({ ...value }, seen) as object) };
  }
  if (Array.isArray(value)) return value.map((item) => redact(item, seen));
  const out: Record<string, unknown> = {};
  for (const [field, fieldValue] of Object.entries(value)) {
    out[field] =
      SECRET_FIELD.test(field) && !PUBLIC_FIELDS.has(field) && fieldValue !== undefined && fieldValue !== null
        ? REDACTED
        : redact(fieldValue, seen);
  }
  return out;
}
