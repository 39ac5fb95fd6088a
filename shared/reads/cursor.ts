/**
 * The cursor of a paged playbook list: the store's start key (a record id) in base64url, so
 * callers treat it as opaque. It cannot reach another account: the store rebuilds the partition
 * from the caller's account and uses the cursor only as a position inside it.
 */
export function encodeCursor(startKey: string): string {
  return Buffer.from(startKey, 'utf8').toString('base64url');
}

/** The start key in a cursor, or undefined when the text is not a cursor this gateway wrote. */
export function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,1400}$/.test(cursor)) return undefined;
  const startKey = Buffer.from(cursor, 'base64url').toString('utf8');
  // Only canonical encodings: bytes that are not UTF-8 decode to U+FFFD and re-encode differently,
  // so this alone refuses them, while an id that really holds U+FFFD round-trips. Control
  // characters are refused: no platform id holds one.
  if (startKey === '' || encodeCursor(startKey) !== cursor || /[\u0000-\u001f\u007f]/.test(startKey)) return undefined;
  return startKey;
}
