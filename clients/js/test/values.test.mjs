// The exact readers of values.ts against independent references: Date for the calendar,
// BigInt for decimals, and a real server's column types end to end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { DucktailClient, dateText, decimalText, toObjects } from '../dist/index.js';
import { skipServer, startServer } from './harness.mjs';

test('dateText is the proleptic Gregorian calendar of Date, for every day Date can hold', () => {
  fc.assert(
    fc.property(fc.integer({ min: -100_000_000, max: 100_000_000 }), (days) => {
      assert.equal(dateText(BigInt(days)), new Date(days * 86_400_000).toISOString().slice(0, -14));
    }),
    { numRuns: 2_000 },
  );
  assert.equal(dateText(0n), '1970-01-01');
  assert.equal(dateText(-719_528n), '0000-01-01');
});

test('decimalText reads two’s-complement words exactly, at any scale', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 127n), max: 2n ** 127n - 1n }), fc.integer({ min: 0, max: 38 }), (n, scale) => {
      const words = new Uint32Array(4);
      let u = n < 0n ? n + (1n << 128n) : n;
      for (let k = 0; k < 4; k++, u >>= 32n) words[k] = Number(u & 0xffffffffn);
      const text = decimalText(words, scale);
      const [int, frac = ''] = text.replace('-', '').split('.');
      assert.equal(frac.length, scale);
      assert.equal(BigInt((n < 0n ? '-' : '') + int + frac), n);
    }),
    { numRuns: 2_000 },
  );
});

const skip = skipServer();

const big = (rows) => JSON.parse(JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? [...v] : v instanceof Map ? Object.fromEntries(v) : v)));

test('column types come out exact: BIGINT past 2^53, DECIMAL(38), TIMESTAMP far from 1970, HUGEINT and nested types', { skip }, async (t) => {
  const srv = await startServer(t);
  const columns = [
    ['i', 'BIGINT'], ['u', 'UBIGINT'], ['d', 'DECIMAL(38,10)'], ['m', 'DECIMAL(9,2)'], ['day', 'DATE'], ['ts', 'TIMESTAMP'],
    ['tz', 'TIMESTAMPTZ'], ['tm', 'TIME'], ['b', 'BLOB'], ['s', 'VARCHAR'], ['f', 'DOUBLE'], ['ok', 'BOOLEAN'], ['small', 'SMALLINT'],
  ].map(([name, type]) => ({ name, type }));
  assert.equal((await srv.api('POST', '/v1/tables', { name: 'x', columns })).status, 201);
  const body = '[{"i":9007199254740993,"u":18446744073709551615,"d":"-1234567890123456789012345678.0123456789","m":-12.05,' +
    '"day":"9999-12-31","ts":"9999-12-31T23:59:59.999999","tz":"1000-01-01T00:00:00.000001Z","tm":"23:59:59.999999",' +
    '"b":"aGVsbG8=","s":"Sea-Tac ☔","f":-3.5,"ok":true,"small":-7},{"i":-9223372036854775808}]';
  const c = new DucktailClient({ baseUrl: srv.url, token: srv.token });
  const baseline = await srv.ingest('x', []);
  await srv.api('POST', '/v1/tables/x/rows', body);
  const want = [
    {
      i: '9007199254740993n', u: '18446744073709551615n', d: '-1234567890123456789012345678.0123456789', m: '-12.05', day: '9999-12-31',
      ts: '9999-12-31T23:59:59.999999', tz: '1000-01-01T00:00:00.000001Z', tm: '23:59:59.999999', b: [104, 101, 108, 108, 111],
      s: 'Sea-Tac ☔', f: -3.5, ok: true, small: -7,
    },
    { i: '-9223372036854775808n', u: null, d: null, m: null, day: null, ts: null, tz: null, tm: null, b: null, s: null, f: null, ok: null, small: null },
  ];
  assert.deepEqual(big(toObjects((await c.snapshot('x')).rows)), want);
  const s = c.stream('x', { cursor: baseline });
  for await (const ev of s) {
    if (ev.type !== 'batch') continue;
    assert.deepEqual(big(toObjects(ev.rows)), want);
    break;
  }
  s.close();

  // The json encoding: 64-bit integers as bigint too; the rest as the server writes it.
  const j = c.stream('x', { cursor: baseline, encoding: 'json' });
  for await (const ev of j) {
    if (ev.type === 'schema') assert.deepEqual(ev.schema.map((col) => col.type), columns.map((col) => col.type));
    if (ev.type !== 'batch') continue;
    assert.equal(ev.rows[0].i, 9007199254740993n);
    assert.equal(ev.rows[0].u, 18446744073709551615n);
    assert.equal(ev.rows[1].i, -9223372036854775808n);
    assert.equal(ev.rows[0].ts, want[0].ts);
    break;
  }
  j.close();

  const q = await c.query(
    "SELECT sum(u) + sum(u) AS total, [1, 2, NULL] AS l, {'a': 1, 'b': 'x'} AS st, MAP {'k': 2} AS mp, $1::BIGINT AS p, INTERVAL '1 month 2 days 3.000004 seconds' AS iv FROM x",
    [9007199254740993n],
  );
  assert.match(q.cursors.x, /^r1\./);
  assert.deepEqual(big(toObjects(q.rows)), [
    { total: '36893488147419103230', l: [1, 2, null], st: { a: 1, b: 'x' }, mp: { k: 2 }, p: '9007199254740993n', iv: { months: 1, days: 2, nanoseconds: '3000004000n' } },
  ]);
});
