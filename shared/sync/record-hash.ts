import { createHash } from 'node:crypto';
import type { JsonValue } from './sync-source';

/** JSON with object keys sorted, so the same record always hashes the same. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).filter((key) => value[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key]!)}`).join(',')}}`;
}

/** What decides "changed": a hash of the normalised fields only, so platform noise costs no write. */
export function recordHash(fields: JsonValue): string {
  return createHash('sha256').update(canonicalJson(fields)).digest('base64url').slice(0, 22);
}
