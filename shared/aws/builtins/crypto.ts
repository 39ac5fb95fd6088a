import type * as Crypto from 'node:crypto';
import { builtin } from './by-require';

/** `node:crypto` for the bundles, through `require` (./by-require.ts says why). */
const crypto = builtin<typeof Crypto>('node:crypto');
export default crypto;
export const { createCipheriv, createDecipheriv, createHash, createHmac, createPrivateKey, getRandomValues, hash, hkdfSync, randomBytes, randomInt, randomUUID, timingSafeEqual } = crypto;
