import { describe, expect, it } from 'vitest';
import { SettingsError, checkedEnvironment, settingsProblems } from '../../shared/config';
import { functionSettings, handlerNames } from '../../shared/handler/function-settings';
import { checkSettingsAtLoad } from '../../shared/handler/settings-check';

/** Settings are checked when a function loads and when `npm start` starts, each problem named. */
describe('settings', () => {
  const aws = { GATEWAY_MODE: 'aws' };

  it('a billing URL template without {site} is named, with what to write instead', () => {
    expect(settingsProblems({ ...aws, BILLING_BASE_URL_TEMPLATE: 'https://acme.chargebee.com' })).toEqual([
      'BILLING_BASE_URL_TEMPLATE: must contain {site}, where each connection\'s Site Name goes (e.g. https://{site}.chargebee.com); got "https://acme.chargebee.com"',
    ]);
  });

  it('names every wrong setting at once: bad addresses, http without the local switch, bad numbers, missing ones', () => {
    const problems = settingsProblems(
      { ...aws, PAYMENT_API_BASE_URL: 'http://127.0.0.1:3001', DATA_LOGIN_URL: 'https://login.example.com/?x=1', SYNC_QUEUE_URL: 'sync-jobs' },
      ['TABLE_NAME', 'SYNC_QUEUE_URL'],
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^TABLE_NAME: is not set; this function needs it \(the DynamoDB table/),
        expect.stringMatching(/^PAYMENT_API_BASE_URL: must be an https:\/\/ address .*ALLOW_INSECURE_PLATFORM_URLS/),
        expect.stringMatching(/^DATA_LOGIN_URL: must not have a query string/),
        expect.stringMatching(/^SYNC_QUEUE_URL: is not a queue URL/),
      ]),
    );
    expect(settingsProblems({ ...aws, PLATFORM_TIMEOUT_MS: 'soon' })[0]).toMatch(/^PLATFORM_TIMEOUT_MS: /);
    expect(settingsProblems({ ...aws, ALLOW_INSECURE_PLATFORM_URLS: 'true' })).toEqual([expect.stringMatching(/^ALLOW_INSECURE_PLATFORM_URLS: must not be true in AWS/)]);
  });

  it('the defaults and the local simulators pass', () => {
    expect(settingsProblems(aws)).toEqual([]);
    expect(
      settingsProblems({ GATEWAY_MODE: 'local', ALLOW_INSECURE_PLATFORM_URLS: 'true', PAYMENT_API_BASE_URL: 'http://localhost:3001', BILLING_BASE_URL_TEMPLATE: 'http://localhost:3002/sites/{site}' }),
    ).toEqual([]);
    expect(() => checkedEnvironment({ ...aws, BILLING_BASE_URL_TEMPLATE: 'x' })).toThrow(SettingsError);
  });

  it('every function that reads settings stops at load in Lambda, naming each one it misses', () => {
    for (const name of handlerNames) {
      const needed = functionSettings[name];
      const load = () => checkSettingsAtLoad(name, { AWS_LAMBDA_FUNCTION_NAME: `fn-${name}` });
      if (needed.length === 0) {
        expect(load, name).not.toThrow();
        continue;
      }
      let message = '';
      try {
        load();
      } catch (error) {
        message = (error as Error).message;
      }
      for (const setting of needed.filter((s) => !['PAYMENT_API_BASE_URL', 'BILLING_BASE_URL_TEMPLATE', 'DATA_LOGIN_URL', 'DATA_SANDBOX_LOGIN_URL'].includes(s))) {
        expect(message, `${name} ${setting}`).toContain(`${setting}: is not set`);
      }
    }
    // Outside Lambda (tests, npm start) the local runtime checks instead.
    expect(() => checkSettingsAtLoad('sync-job', {})).not.toThrow();
  });
});
