import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountView } from '../../shared/api/account-view';
import { startTestGateway, type TestGateway } from '../support/local-runtime';

/** Accounts through the API: operators create and list them; users see their own only. */
describe('accounts', () => {
  let gateway: TestGateway;
  let operator: string;

  beforeAll(async () => {
    gateway = await startTestGateway();
    operator = await gateway.operatorToken();
  });
  afterAll(() => gateway.stop());

  const put = (accountId: string, body: unknown) => gateway.call('PUT', `/api/v1/accounts/${accountId}`, { token: operator, body });
  const list = async (query = '', token = operator) => {
    const response = await gateway.call('GET', `/api/v1/accounts${query}`, { token });
    return { status: response.status, body: (await response.json()) as { accounts: AccountView[]; nextCursor?: string } };
  };

  it('creating an account needs only its name: Integrations start off; left out later, the setting is kept', async () => {
    const created = await put('zeta', { name: 'Zeta' });
    expect(created.status).toBe(200);
    expect(await created.json()).toMatchObject({ accountId: 'zeta', name: 'Zeta', integrationsEnabled: false });

    expect((await put('zeta', { name: 'Zeta', integrationsEnabled: true })).status).toBe(200);
    const renamed = await put('zeta', { name: 'Zeta Ltd' });
    expect(await renamed.json()).toMatchObject({ name: 'Zeta Ltd', integrationsEnabled: true });
  });

  it('an operator lists every account by id, a page at a time', async () => {
    for (const id of ['alpha', 'beta', 'gamma', 'delta']) expect((await put(id, { name: id.toUpperCase(), integrationsEnabled: id === 'beta' })).status).toBe(200);
    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body.accounts.map((a) => a.accountId)).toEqual(['alpha', 'beta', 'delta', 'gamma', 'zeta']);
    expect(all.body.accounts.find((a) => a.accountId === 'beta')).toMatchObject({ name: 'BETA', integrationsEnabled: true });
    expect(all.body.nextCursor).toBeUndefined();

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.body.accounts.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.accounts.map((a) => a.accountId));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['alpha', 'beta', 'delta', 'gamma', 'zeta']);
  });

  it('only operators may list; bad paging is refused', async () => {
    const user = await list('', await gateway.userToken('alpha'));
    expect(user.status).toBe(403);
    expect(user.body).not.toHaveProperty('accounts');
    expect((await list('?limit=0')).status).toBe(400);
    expect((await list('?cursor=not-a-cursor!')).status).toBe(400);
    expect((await gateway.call('GET', '/api/v1/accounts')).status).toBe(401);
  });
});
