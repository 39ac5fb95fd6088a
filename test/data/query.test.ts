import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataClient } from '../../shared/data/client';
import { profileByEmail, profiles, rowsAsObjects, runQuery } from '../../shared/data/query';
import { buildSelect } from '../../shared/data/sql';
import type { PlatformClient } from '../../shared/http/platform-client';
import { unlimitedRateBudget } from '../../shared/http/rate-budget';
import type { UnifiedIndividual } from '../../sandbox/data-simulator';
import { startDataSandbox, type DataSandbox } from './support';

describe('rows as objects', () => {
  it('places each cell by its column placeInOrder, not by metadata key order', () => {
    const rows = rowsAsObjects({
      data: [
        ['a@x.example', 'id1'],
        [null, 'id2'],
      ],
      metadata: { IndividualId: { placeInOrder: 1 }, Email: { placeInOrder: 0 } },
    });
    expect(rows).toEqual([
      { IndividualId: 'id1', Email: 'a@x.example' },
      { IndividualId: 'id2', Email: null },
    ]);
  });
});

describe('queries over HTTP against the data platform simulator (batches of 10 rows)', () => {
  let sandbox: DataSandbox;
  let session: Pick<PlatformClient, 'request'>;
  let seeded: UnifiedIndividual[];
  const queryCalls = () => {
    let posts = 0;
    let gets = 0;
    for (const [key, count] of sandbox.sim.requests) {
      if (key === 'POST /services/data/v61.0/ssot/queryv2') posts += count;
      else if (key.startsWith('GET /services/data/v61.0/ssot/queryv2/')) gets += count;
    }
    return { posts, gets };
  };

  beforeAll(async () => {
    sandbox = await startDataSandbox({ simulator: { queryBatchSize: 10 } });
    session = dataClient({ env: sandbox.env, accountId: sandbox.accountId, config: sandbox.config, credentials: sandbox.credentials, rateBudget: unlimitedRateBudget });
    seeded = sandbox.sim.data.seedUnifiedIndividuals(35);
    sandbox.sim.data.addUnifiedIndividuals([{ IndividualId: 'quote1', FirstName: "Miles", LastName: "O'Brien", Email: "miles.o'brien@example.com" }]);
  });
  afterAll(async () => sandbox.stop());

  it('pages through nextBatchId until done, mapping every row', async () => {
    const before = queryCalls();
    const sql = buildSelect({ from: 'UnifiedIndividual', select: { kind: 'columns', columns: ['Email', 'IndividualId'] } });
    const result = await runQuery(session, sql);
    expect(result.truncated).toBe(false);
    expect(result.rows).toHaveLength(36);
    expect(result.rows.slice(0, 35)).toEqual(seeded.map((p) => ({ Email: p.Email, IndividualId: p.IndividualId })));
    const after = queryCalls();
    expect(after.posts - before.posts).toBe(1);
    expect(after.gets - before.gets).toBe(3);
  });

  it('stops fetching at the row cap and says the result was cut', async () => {
    const before = queryCalls();
    const result = await runQuery(session, buildSelect({ from: 'UnifiedIndividual', select: { kind: 'columns', columns: ['IndividualId'] } }), { maxRows: 15 });
    expect(result.rows).toHaveLength(15);
    expect(result.truncated).toBe(true);
    expect(queryCalls().gets - before.gets).toBe(1);
  });

  it('reads a unified profile by email, quotes included, and nothing for an unknown one', async () => {
    const target = seeded[12]!;
    expect(await profileByEmail(session, target.Email)).toEqual({
      individualId: target.IndividualId,
      firstName: target.FirstName,
      lastName: target.LastName,
      email: target.Email,
    });
    expect(await profileByEmail(session, "miles.o'brien@example.com")).toMatchObject({ individualId: 'quote1', lastName: "O'Brien" });
    expect(await profileByEmail(session, "nobody@example.com' OR '1'='1")).toBeUndefined();
  });

  it('lists profiles up to the limit', async () => {
    const listed = await profiles(session, { limit: 25 });
    expect(listed.map((p) => p.individualId)).toEqual(seeded.slice(0, 25).map((p) => p.IndividualId));
  });

  it('counts with COUNT(*)', async () => {
    const { rows } = await runQuery(session, buildSelect({ from: 'UnifiedIndividual', select: { kind: 'count' } }));
    expect(Object.values(rows[0] ?? {})).toEqual([36]);
  });
});
