import { describe, expect, it } from 'vitest';
import { CURSOR_LIFETIME_SECONDS, CursorError, cursorKey, openCursor, queryFingerprint, signCursor } from '../../shared/data/query-cursor';

describe('signed query cursors', () => {
  const key = cursorKey('acme', { privateKey: 'generated-at-run-time' });
  const query = { a: 'acme', o: 'UnifiedIndividual__dlm', q: queryFingerprint({ columns: ['Email'], filters: [] }) };
  const now = Date.UTC(2030, 0, 1);

  it('gives back the position it holds for the same account and query', () => {
    expect(openCursor(key, signCursor(key, { ...query, k: 'id-42' }, now), query, now + 1000)).toBe('id-42');
    expect(openCursor(key, signCursor(key, { ...query, k: 7 }, now), query, now)).toBe(7);
  });

  it('refuses another account’s key, another query, an edit, and an expired cursor', () => {
    const cursor = signCursor(key, { ...query, k: 'id-42' }, now);
    expect(() => openCursor(cursorKey('other', { privateKey: 'generated-at-run-time' }), cursor, { ...query, a: 'other' }, now)).toThrow(CursorError);
    expect(() => openCursor(cursorKey('acme', { privateKey: 'reconnected' }), cursor, query, now)).toThrow(CursorError);
    expect(() => openCursor(key, cursor, { ...query, q: queryFingerprint({ columns: ['Email'], filters: [{ column: 'FirstName' }] }) }, now)).toThrow(/another query/);
    const [payload, signature] = cursor.split('.');
    const edited = Buffer.from(Buffer.from(payload!, 'base64url').toString().replace('id-42', 'id-00')).toString('base64url');
    expect(() => openCursor(key, `${edited}.${signature}`, query, now)).toThrow(CursorError);
    expect(() => openCursor(key, cursor, query, now + (CURSOR_LIFETIME_SECONDS + 1) * 1000)).toThrow(/expired/);
    for (const junk of ['', '.', 'abc', `${payload}.`, `${payload}.${'A'.repeat(43)}`]) expect(() => openCursor(key, junk, query, now)).toThrow(CursorError);
  });
});
