// Shapes against a real ducktail serve (harness.mjs): a shaped liveQuery holds exactly
// the shaped rows across live commits, a shaped stream through /stream/{token} carries
// only the shape's rows and columns, and a refused predicate is the 400 problem.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DucktailClient, HttpError, RefreshRequiredError, toObjects } from '../dist/index.js';
import { skipServer, startServer, until } from './harness.mjs';

const skip = skipServer();

/** A column name that ?columns= must quote: it holds a comma and a quote. */
const ODD = 'note, "q"';

function client(base, token, extra = {}) {
  return new DucktailClient({
    baseUrl: base,
    token,
    heartbeatIntervalMs: 300,
    heartbeatSlackMs: 1_500,
    backoff: { baseMs: 50, capMs: 1_000, stableAfterMs: 5_000 },
    ...extra,
  });
}

/** ids from up to to (excluded): region eu for even ids, us for odd ones. */
const rows = (from, to) =>
  Array.from({ length: to - from }, (_, i) => ({ id: from + i, region: (from + i) % 2 === 0 ? 'eu' : 'us', [ODD]: `n${from + i}`, temp: from + i }));
const shape = { where: "region = 'eu' AND temp < 100", columns: [ODD, 'id'] };
/** The rows of a shaped table, as [note, id] pairs in id order. */
const shaped = (table) => toObjects(table).map((r) => [r[ODD], Number(r.id)]).sort((a, b) => a[1] - b[1]);
const expected = (ids) => ids.filter((i) => i % 2 === 0 && i < 100).map((i) => [`n${i}`, i]);

test('a shaped liveQuery holds exactly the shaped rows and columns across live commits', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('sh', rows(0, 10));
  const c = client(srv.url, srv.token);
  const changes = [];
  const errors = [];
  const lq = c.liveQuery('sh', { shape, onChange: (ch) => changes.push(ch), onError: (e) => errors.push(e) });
  t.after(() => lq.close());
  await until(() => lq.status === 'live', 10_000, 'the liveQuery live');
  assert.deepEqual(lq.rows.schema.fields.map((f) => f.name), [ODD, 'id']);
  assert.deepEqual(shaped(lq.rows), expected([...Array(10).keys()]));
  assert.ok(lq.cursor.startsWith('r2.'), lq.cursor);

  // A mixed commit, one with no matching row (us, and eu past the temp bound), a matching one.
  await srv.ingest('sh', rows(10, 14));
  await srv.ingest('sh', [{ id: 15, region: 'us', [ODD]: 'n15', temp: 1 }, { id: 16, region: 'eu', [ODD]: 'n16', temp: 500 }]);
  await srv.ingest('sh', rows(20, 21));
  await until(() => changes.filter((ch) => ch.kind === 'batch').length === 3, 10_000, 'three batches');
  const batches = changes.filter((ch) => ch.kind === 'batch');
  assert.deepEqual(batches.map((b) => shaped(b.batch)), [expected([10, 11, 12, 13]), [], expected([20])]);
  assert.deepEqual(shaped(lq.rows), expected([...Array(14).keys(), 20]));

  // The shaped snapshot at the head is what the liveQuery holds, at the same cursor.
  const head = await c.snapshot('sh', { shape });
  assert.deepEqual(shaped(head.rows), shaped(lq.rows));
  assert.equal(head.cursor, lq.cursor);
  assert.deepEqual(errors, []);

  // That cursor belongs to the shape: without it the stream is refresh-required.
  const other = c.stream('sh', { cursor: head.cursor });
  await assert.rejects(other.connected(10_000), (e) => e instanceof RefreshRequiredError && e.reason === 'shape_mismatch');
});

test('a shaped stream through /stream/{token} carries only the shape', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('sp', rows(0, 4));
  const tok = await srv.api('POST', '/v1/tokens', { purpose: 'stream', table: 'sp' });
  const c = client(srv.url, tok.body.token, { tokenInPath: true });
  const snap = await c.snapshot('sp', { shape });
  assert.deepEqual(shaped(snap.rows), expected([0, 1, 2, 3]));
  const s = c.stream('sp', { cursor: snap.cursor, shape });
  t.after(() => s.close());
  await srv.ingest('sp', rows(4, 8));
  for await (const ev of s) {
    assert.deepEqual(ev.schema.fields.map((f) => f.name), [ODD, 'id']);
    if (ev.type === 'batch') {
      assert.deepEqual(shaped(ev.rows), expected([4, 5, 6, 7]));
      break;
    }
  }
});

test('a refused predicate is the 400 problem, through onError and the status', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('bp', rows(0, 2));
  const c = client(srv.url, srv.token);
  for (const where of ['random() < 0.5', 'no_such_column = 1', 'region = ']) {
    const errors = [];
    const statuses = [];
    const lq = c.liveQuery('bp', { shape: { where }, onError: (e) => errors.push(e), onStatus: (s, d) => statuses.push(`${s}:${d.reason ?? ''}`) });
    await until(() => lq.status === 'failed', 10_000, `the liveQuery failed on ${where}`);
    assert.equal(errors.length, 1, `${where}: ${errors.join('; ')}`);
    const e = errors[0];
    assert.ok(e instanceof HttpError && e.status === 400 && !e.retryable, `${where}: ${e}`);
    assert.equal(e.problem?.field, 'where', JSON.stringify(e.problem));
    assert.ok(typeof e.problem?.detail === 'string' && e.problem.detail.length > 0, JSON.stringify(e.problem));
    assert.deepEqual(statuses, ['failed:400']);
    assert.equal(lq.rows, null);
    lq.close();
  }
  await assert.rejects(c.snapshot('bp', { shape: { columns: ['nope'] } }), (e) => e instanceof HttpError && e.status === 400 && e.problem?.field === 'columns');
});
