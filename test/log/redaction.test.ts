import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Logger, setLogSink } from '../../shared/log/logger';
import { redact, registerSecret } from '../../shared/log/redaction';
import { generatedKey } from '../support/local-runtime';
import { newApiKey } from '../../shared/api-keys/api-key';

describe('log redaction', () => {
  const lines: string[] = [];
  const restore = setLogSink((line) => lines.push(line));
  afterEach(() => {
    lines.length = 0;
  });

  it('scrubs secrets whatever field or shape they arrive in', () => {
    setLogSink((line) => lines.push(line));
    const apiKey = generatedKey('live_');
    const secretKey = generatedKey('sk_test_');
    registerSecret(apiKey);
    const pem = `-----BEGIN PRIVATE KEY-----\n${generatedKey('')}${generatedKey('')}\n-----END PRIVATE KEY-----`;
    new Logger({ accountId: 'acme' }).error('platform call failed', {
      credentials: { apiKey, secretKey },
      // Not named like a secret: caught because the vault registered it.
      note: `the key was ${apiKey}`,
      // Not registered: caught by its shape.
      detail: `Invalid API Key provided: ${secretKey}`,
      header: `Basic ${Buffer.from(`${apiKey}:`).toString('base64')}`,
      // The identity service's access tokens, echoed back in an error.
      echoed: `Invalid token 00D5g000004fXyZ!${generatedKey('AQ')}${generatedKey('')}`,
      key: pem,
      error: new Error(`request with ${apiKey} failed`),
    });
    const text = lines.join('\n');
    expect(text).toContain('platform call failed');
    expect(text).toContain('acme');
    const echoedToken = /00D\S+/.exec(lines.join('\n'))?.[0];
    expect(echoedToken).toBeUndefined();
    for (const secret of [apiKey, secretKey, pem.split('\n')[1]!, Buffer.from(`${apiKey}:`).toString('base64')]) {
      expect(text).not.toContain(secret);
    }
    setLogSink(restore);
  });

  it('scrubs playbook API keys (igk_) by their shape, in a message or a field, whole or cut short', () => {
    const { key } = newApiKey('acme');
    const text = JSON.stringify(redact({ note: `called with ${key}`, header: key, cut: key.slice(0, 30) }));
    expect(text).not.toContain(key.split('_').at(-1)!.slice(0, 12));
    expect(text).not.toMatch(/igk_/);
    expect(text).toContain('called with');
  });

  it('property: a registered secret never survives, nested anywhere', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 12, maxLength: 40 }).filter((s) => s.trim().length >= 12 && !/[\\"]/.test(s)), fc.jsonValue(), (secret, shape) => {
        registerSecret(secret);
        const value = { shape, deep: [{ text: `prefix ${secret} suffix` }], [`field-${secret.length}`]: secret };
        expect(JSON.stringify(redact(value))).not.toContain(secret);
      }),
      { numRuns: 200 },
    );
  });

  it('through the Powertools logger: its standard keys, and no secret in the message, a field or an error', () => {
    const lines: string[] = [];
    const restoreSink = setLogSink((line) => lines.push(line));
    const webhookSecret = generatedKey('whsec_');
    const password = generatedKey('pw');
    registerSecret(password);
    new Logger({ accountId: 'acme' }).with({ connector: 'billing' }).warn(`refused ${webhookSecret}`, {
      webhookSigningSecret: webhookSecret,
      error: new Error(`Basic ${Buffer.from(`user:${password}`).toString('base64')} refused; password was ${password}`),
    });
    setLogSink(restoreSink);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'WARN', service: 'integration-gateway', accountId: 'acme', connector: 'billing', message: 'refused [redacted]', webhookSigningSecret: '[redacted]' });
    expect(typeof line.timestamp).toBe('string');
    expect(lines[0]).not.toContain(webhookSecret);
    expect(lines[0]).not.toContain(password);
    expect(lines[0]).not.toContain(Buffer.from(`user:${password}`).toString('base64'));
  });
});
