// The client against a real ducktail serve on loopback (harness.mjs): the three endings,
// refusals, handlers that throw, exact liveQuery across kill -9 and a reset, and the
// fault-injecting proxy (proxy.mjs) cutting, stalling and splitting the stream.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DucktailClient, FailureError, HandlerError, HttpError, RefreshRequiredError, toObjects } from '../dist/index.js';
import { skipServer, startServer, until } from './harness.mjs';
import { startProxy } from './proxy.mjs';

const skip = skipServer();

/** A client with the test server's short heartbeat and quick backoff. */
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

/** ids 'from' up to 'to' (excluded) as rows. */
const rows = (from, to) => Array.from({ length: to - from }, (_, i) => ({ id: from + i, label: `row ${from + i}` }));
const ids = (table) => (table ? toObjects(table).map((r) => Number(r.id)) : []);
const range = (n) => Array.from({ length: n }, (_, i) => i);

/** Records a stream's statuses, errors and events. */
function record(stream) {
  const r = { statuses: [], errors: [], events: [] };
  stream.subscribe({
    next: (ev) => r.events.push(ev),
    status: (s, d) => r.statuses.push(d.reason ? `${s}:${d.reason}` : s),
    error: (e) => r.errors.push(e),
  });
  return r;
}

test('a stream delivers schema and batches with their cursors, in order, and resumes from a cursor', { skip }, async (t) => {
  const srv = await startServer(t);
  const baseline = await srv.ingest('ev', rows(0, 1));
  const c = client(srv.url, srv.token);
  const s = c.stream('ev');
  const r = record(s);
  await s.connected(10_000);
  assert.equal(s.status, 'live');
  const cursors = [];
  for (let i = 1; i < 4; i++) cursors.push(await srv.ingest('ev', rows(i, i + 1)));
  await until(() => r.events.filter((e) => e.type === 'batch').length === 3, 10_000, 'three batches');
  assert.equal(r.events[0].type, 'schema');
  assert.equal(r.events[0].cursor, baseline);
  const batches = r.events.filter((e) => e.type === 'batch');
  assert.deepEqual(batches.map((e) => e.cursor), cursors);
  assert.deepEqual(batches.map((e) => ids(e.rows)), [[1], [2], [3]]);
  assert.equal(s.cursor, cursors[2]);
  s.close();
  assert.equal(s.status, 'closed');
  assert.deepEqual(r.statuses, ['connecting', 'live', 'closed']);

  // From the first batch's cursor: the two after it, nothing twice.
  const again = c.stream('ev', { cursor: cursors[0] });
  const got = [];
  for await (const ev of again) {
    if (ev.type === 'batch') got.push(...ids(ev.rows));
    if (got.length === 2) break;
  }
  again.close();
  assert.deepEqual(got, [2, 3]);
});

test('refresh-required ends the stream: status, error handler and iterator say why', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('rr', rows(0, 1));
  const s = client(srv.url, srv.token).stream('rr');
  const r = record(s);
  await s.connected(10_000);
  const iterated = (async () => {
    for await (const ev of s) void ev;
  })().then(() => null, (e) => e);
  assert.equal((await srv.api('POST', '/v1/tables/rr/reset')).status, 200);
  const thrown = await iterated;
  assert.ok(thrown instanceof RefreshRequiredError && thrown.reason === 'table_reset', String(thrown));
  assert.equal(s.status, 'refresh-required');
  assert.ok(r.errors.some((e) => e instanceof RefreshRequiredError && e.reason === 'table_reset'));
  assert.deepEqual(r.statuses.slice(-1), ['refresh-required:table_reset']);
});

test('failure ends the stream: a revoked token', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('fl', rows(0, 1));
  const tok = await srv.api('POST', '/v1/tokens', { purpose: 'stream', table: 'fl' });
  const s = client(srv.url, tok.body.token).stream('fl');
  const r = record(s);
  await s.connected(10_000);
  assert.equal((await srv.api('DELETE', `/v1/tokens/${tok.body.id}`)).status, 204);
  await until(() => s.status === 'failed', 10_000, 'status failed');
  assert.ok(s.error instanceof FailureError && s.error.code === 'token_revoked', String(s.error));
  assert.ok(r.errors.some((e) => e instanceof FailureError));
});

test('a refusal before the stream: 4xx is terminal with its problem, 429 retried after Retry-After', { skip }, async (t) => {
  const srv = await startServer(t, ['--max-streams-per-token', '1']);
  await srv.ingest('hx', rows(0, 1));
  const c = client(srv.url, srv.token);

  const missing = c.stream('nosuchtable');
  await assert.rejects(missing.connected(10_000), (e) => e instanceof HttpError && e.status === 404 && e.problem?.code === 'not_found');
  assert.equal(missing.status, 'failed');

  const bad = client(srv.url, `dt_${'0'.repeat(16)}_${'a'.repeat(52)}`).stream('hx');
  await assert.rejects(bad.connected(10_000), (e) => e instanceof HttpError && e.status === 401 && !e.retryable);

  // The token's one stream is taken: the second gets 429 and retries until the first closes.
  const first = c.stream('hx');
  await first.connected(10_000);
  const second = c.stream('hx');
  const r = record(second);
  await until(() => r.errors.some((e) => e instanceof HttpError && e.status === 429), 10_000, 'a 429');
  const refused = r.errors.find((e) => e instanceof HttpError);
  assert.ok(refused.retryable && refused.retryAfterMs > 0, `429 with Retry-After: ${refused.retryAfterMs} ms`);
  assert.ok(r.statuses.includes('reconnecting:429'), r.statuses.join(' '));
  first.close();
  await second.connected(20_000);
  second.close();
});

test('getToken is asked on every connection attempt', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('gt', rows(0, 1));
  const proxy = await startProxy(t, srv.url, (i) => (i === 0 ? { cutAfter: 200 } : {}));
  let asked = 0;
  const s = client(proxy.url, undefined, { getToken: async () => (asked++, srv.token) }).stream('gt');
  await until(() => proxy.log.length >= 2 && s.status === 'live', 10_000, 'a second connection');
  assert.ok(asked >= 2, `getToken called ${asked} times`);
  s.close();
});

test('a handler that throws is reported through error; the other handlers still get every event', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('hd', rows(0, 1));
  const s = client(srv.url, srv.token).stream('hd');
  const errors = [];
  s.subscribe({ next: () => { throw new Error('boom'); }, error: (e) => errors.push(e) });
  const r = record(s);
  await s.connected(10_000);
  await srv.ingest('hd', rows(1, 2));
  await srv.ingest('hd', rows(2, 3));
  await until(() => r.events.filter((e) => e.type === 'batch').length === 2, 10_000, 'both batches');
  assert.equal(s.status, 'live');
  assert.ok(errors.filter((e) => e instanceof HandlerError && e.handler === 'next').length >= 3);
  assert.ok(r.errors.some((e) => e instanceof HandlerError && e.cause.message === 'boom'));
  s.close();
});

test('a payload that does not decode is a failure, not a dropped row', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('ud', rows(0, 1));
  const proxy = await startProxy(t, srv.url, () => ({ corruptBatch: 2 }));
  const s = client(proxy.url, srv.token).stream('ud');
  const r = record(s);
  await s.connected(10_000);
  await srv.ingest('ud', rows(1, 2));
  await srv.ingest('ud', rows(2, 3));
  await until(() => s.status === 'failed', 10_000, 'status failed');
  assert.ok(s.error instanceof FailureError && s.error.code === 'undecodable', String(s.error));
  assert.deepEqual(r.events.filter((e) => e.type === 'batch').map((e) => ids(e.rows)), [[1]]);
});

test('through the fault proxy (cuts mid-event, stalls, CR and CRLF line ends, one-byte pieces) every row arrives once, in order', { skip }, async (t) => {
  const srv = await startServer(t);
  const from = await srv.ingest('fp', rows(0, 1));
  // Sixty commits to replay (about 450 bytes of SSE each), so that each of the ten faulty
  // connections, cut or stalled within its first 1,600 bytes, still has data to carry
  // at its fault; from the tenth connection on, clean ones (still in random pieces).
  for (let i = 1; i <= 60; i++) await srv.ingest('fp', rows(i, i + 1));
  const proxy = await startProxy(t, srv.url, (i, _req, random) => {
    if (i >= 10) return { chunked: true };
    const at = 100 + Math.floor(random() * 1_500);
    return { chunked: true, lineEnd: ['\r\n', '\r', ''][i % 3], ...(i % 4 === 3 ? { stallAfter: at } : { cutAfter: at }) };
  }, 7);
  const s = client(proxy.url, srv.token).stream('fp', { cursor: from });
  const got = [];
  const r = record(s);
  s.subscribe({ next: (ev) => ev.type === 'batch' && got.push(...ids(ev.rows)) });
  for (let i = 61; i <= 70; i++) await srv.ingest('fp', rows(i, i + 1));
  await until(() => got.length >= 70, 60_000, 'seventy rows');
  assert.deepEqual(got, range(71).slice(1));
  assert.equal(proxy.log.filter((e) => e.cut).length, 8, JSON.stringify(proxy.log));
  assert.equal(proxy.log.filter((e) => e.stalled).length, 2, JSON.stringify(proxy.log));
  assert.ok(r.errors.filter((e) => e.silence).length >= 2, 'the watchdog took each stall for a dead connection');
  const resumed = proxy.log.map((e) => e.lastEventId);
  assert.ok(resumed.every((id) => id !== ''), 'every connection sent Last-Event-ID');
  s.close();
});

test('liveQuery is exact across kill -9 of the server and across a reset', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('lq', rows(0, 500));
  const c = client(srv.url, srv.token);
  const seen = [];
  const statuses = [];
  const lq = c.liveQuery('lq', {
    onChange: (ch) => seen.push({ kind: ch.kind, reason: ch.reason, ids: ids(ch.rows) }),
    onStatus: (st) => statuses.push(st),
  });
  // Every state a listener sees is whole: a prefix of the rows, counted from 0.
  const torn = [];
  lq.subscribe(() => {
    const got = ids(lq.getSnapshot().rows);
    if (!got.every((id, i) => id === i + (got[0] ?? 0))) torn.push(got.length);
  });
  await until(() => lq.status === 'live' && lq.rows?.numRows === 500, 10_000, 'the snapshot');
  let next = 500;
  const commit = async (n) => {
    await srv.ingest('lq', rows(next, next + n));
    next += n;
  };
  for (let i = 0; i < 5; i++) await commit(7);

  await srv.kill9();
  await srv.start();
  for (let i = 0; i < 5; i++) await commit(11);
  await until(() => lq.rows?.numRows === next, 30_000, `${next} rows after the restart`);
  assert.deepEqual(ids(lq.rows), range(next));
  assert.ok(statuses.includes('reconnecting'), statuses.join(' '));
  const snap = await c.snapshot('lq');
  assert.equal(lq.cursor, snap.cursor);

  assert.equal((await srv.api('POST', '/v1/tables/lq/reset')).status, 200);
  await srv.ingest('lq', rows(0, 3));
  await until(() => lq.rows?.numRows === 3 && lq.status === 'live', 20_000, 'the rows after the reset');
  assert.deepEqual(ids(lq.rows), [0, 1, 2]);
  const reset = seen.find((ch) => ch.kind === 'snapshot' && ch.reason === 'table_reset');
  assert.ok(reset, JSON.stringify(seen.map((s) => [s.kind, s.reason])));
  assert.deepEqual(torn, []);
  // Snapshots only at the start and after the reset: the stream's schema is the snapshot's.
  assert.deepEqual(seen.filter((ch) => ch.kind === 'snapshot').map((ch) => ch.reason), ['', 'table_reset']);
  lq.close();
  assert.equal(lq.status, 'closed');
});

test('liveQuery takes a new snapshot when a column is added, and keeps every row', { skip }, async (t) => {
  const srv = await startServer(t);
  await srv.ingest('sc', rows(0, 10));
  const seen = [];
  const lq = client(srv.url, srv.token).liveQuery('sc', { onChange: (ch) => seen.push([ch.kind, ch.reason]) });
  await until(() => lq.status === 'live' && lq.rows?.numRows === 10, 10_000, 'the snapshot');
  await srv.ingest('sc', rows(10, 12));
  assert.equal((await srv.api('POST', '/v1/tables/sc/columns', { name: 'extra', type: 'VARCHAR' })).status, 201);
  await srv.ingest('sc', [{ id: 12, label: 'row 12', extra: 'new' }]);
  await until(() => lq.rows?.numRows === 13, 10_000, 'the row after the column change');
  assert.deepEqual(lq.rows.schema.fields.map((f) => f.name), ['id', 'label', 'extra']);
  assert.deepEqual(ids(lq.rows), range(13));
  assert.equal(toObjects(lq.rows).at(-1).extra, 'new');
  assert.deepEqual(seen.filter(([kind]) => kind === 'snapshot'), [['snapshot', ''], ['snapshot', 'schema']]);
  lq.close();
});
