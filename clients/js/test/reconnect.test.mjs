// Property tests of the reconnect state machine: the schedule's delays against a model of
// docs/consuming.md, "Reconnecting", and a DucktailStream driven through random
// sequences of connection endings by a scripted fetch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { tableFromArrays, tableToIPC } from 'apache-arrow';
import { DucktailClient, Schedule, parseRetryAfter, retryableStatus } from '../dist/index.js';

const endings = fc.oneof(
  fc.record({ kind: fc.constant('abrupt'), heldMs: fc.nat(60_000), delivered: fc.boolean() }),
  fc.record({
    kind: fc.constant('http'),
    status: fc.constantFrom(400, 401, 403, 404, 408, 409, 429, 500, 503),
    retryAfterMs: fc.nat(120_000),
    heldMs: fc.nat(100),
    delivered: fc.constant(false),
  }),
  fc.record({ kind: fc.constant('reconnect'), retryMs: fc.nat(10_000), heldMs: fc.nat(60_000), delivered: fc.boolean() }),
  fc.record({ kind: fc.constantFrom('refresh-required', 'failure', 'undecodable') }),
);

test('schedule property: delays are the server floor plus full jitter under min(cap, base·2^attempt), reset only after a held connection', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(endings, fc.record({ kind: fc.constant('retry-field'), ms: fc.nat(10_000) })), { maxLength: 40 }),
      fc.double({ min: 0, max: 0.999999, noNaN: true }),
      fc.integer({ min: 1, max: 2_000 }),
      (steps, r, baseMs) => {
        const s = new Schedule({ baseMs, capMs: 30_000, stableAfterMs: 5_000, random: () => r });
        let attempt = 0;
        let floor = 0;
        for (const e of steps) {
          if (e.kind === 'retry-field') {
            s.setRetry(e.ms);
            floor = e.ms;
            continue;
          }
          const d = s.decide(e);
          if (e.kind === 'refresh-required') {
            assert.deepEqual(d, { retry: false, status: 'refresh-required' });
            continue;
          }
          if (e.kind === 'failure' || e.kind === 'undecodable' || (e.kind === 'http' && !retryableStatus(e.status))) {
            assert.deepEqual(d, { retry: false, status: 'failed' });
            continue;
          }
          if (e.delivered || e.heldMs >= 5_000) attempt = 0;
          const ceiling = Math.min(30_000, baseMs * 2 ** attempt);
          attempt++;
          const server = e.kind === 'http' ? e.retryAfterMs : e.kind === 'reconnect' ? e.retryMs : floor;
          assert.equal(d.retry, true);
          assert.equal(d.delayMs, server + Math.floor(r * (ceiling + 1)));
          assert.ok(d.delayMs - server <= 30_000, 'the jitter is capped at 30 s');
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('4xx is terminal except 408 and 429; 5xx is retried', () => {
  for (let status = 400; status < 600; status++) {
    assert.equal(retryableStatus(status), status === 408 || status === 429 || status >= 500, String(status));
  }
});

test('Retry-After: delay-seconds or an HTTP-date, at most an hour', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('3', now), 3_000);
  assert.equal(parseRetryAfter(' 0 ', now), 0);
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now), 10_000);
  assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
  assert.equal(parseRetryAfter('99999', now), 3_600_000);
  assert.equal(parseRetryAfter('soon', now), 0);
  assert.equal(parseRetryAfter(null, now), 0);
});

// --- the stream's state machine, through a scripted fetch ---

const b64 = (table) => Buffer.from(tableToIPC(table, 'stream')).toString('base64');
const SCHEMA = b64(tableFromArrays({ id: new Int32Array([]) }));
const batchPayload = (id) => b64(tableFromArrays({ id: new Int32Array([id]) }));

/** What one connection does: a refusal, or 200 with batches and then an ending. */
const connection = fc.oneof(
  { weight: 3, arbitrary: fc.record({ batches: fc.nat(3), end: fc.constantFrom('abrupt', 'reconnect', 'silence', 'refresh-required', 'failure', 'corrupt') }) },
  { weight: 1, arbitrary: fc.record({ status: fc.constantFrom(401, 403, 404, 408, 429, 503) }) },
);

/** A scripted fetch: the i-th call plays script[i]; past the script, a stream that stays open. */
function scriptedFetch(script, calls) {
  let counter = 0;
  return async (url, init) => {
    const step = script[calls.length];
    calls.push({ url, lastEventId: init.headers['Last-Event-ID'] ?? '' });
    if (step?.status) {
      return new Response(JSON.stringify({ status: step.status, code: 'x', detail: 'scripted' }), {
        status: step.status,
        headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '0' },
      });
    }
    let text = `retry: 1\n\nevent: schema\nid: ${init.headers['Last-Event-ID'] || 'baseline'}\ndata: ${SCHEMA}\n\n`;
    for (let j = 0; j < (step?.batches ?? 0); j++) {
      counter++;
      text += `event: batch\nid: c${counter}\ndata: ${batchPayload(counter)}\n\n`;
    }
    const end = step?.end ?? 'open';
    if (end === 'reconnect') text += 'event: reconnect\ndata: {"reason":"server_draining","retry_ms":1}\n\n';
    if (end === 'refresh-required') text += 'event: refresh-required\ndata: {"reason":"table_reset"}\n\n';
    if (end === 'failure') text += 'event: failure\ndata: {"code":"internal","message":"scripted"}\n\n';
    if (end === 'corrupt') text += 'event: batch\nid: bad\ndata: bm90IGFycm93\n\n';
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(text));
        if (end === 'abrupt' || end === 'reconnect' || end === 'refresh-required' || end === 'failure' || end === 'corrupt') c.close();
        // Past the script the connection stays open, its heartbeats keeping the watchdog quiet.
        const beat = end === 'open' ? setInterval(() => c.enqueue(new TextEncoder().encode('event: heartbeat\ndata:\n\n')), 10) : undefined;
        init.signal.addEventListener('abort', () => {
          clearInterval(beat);
          c.error(new Error('aborted'));
        }, { once: true });
      },
    });
    return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
  };
}

test('stream property: every batch once and in order, Last-Event-ID the last processed cursor, and it stops exactly at a terminal ending', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(connection, { maxLength: 8 }), async (script) => {
      const calls = [];
      const c = new DucktailClient({
        baseUrl: 'http://ducktail.invalid',
        token: 't',
        fetch: scriptedFetch(script, calls),
        heartbeatIntervalMs: 50,
        heartbeatSlackMs: 100,
        backoff: { baseMs: 1, capMs: 4 },
      });
      const s = c.stream('t');
      const got = [];
      const statuses = [];
      s.subscribe({ next: (ev) => ev.type === 'batch' && got.push(ev.cursor), status: (st) => statuses.push(st) });

      // The model: where the script stops, and which batches arrive before.
      let want = [];
      let final = 'live';
      let counter = 0;
      const lastIds = [''];
      for (const step of script) {
        if (step.status) {
          if (![408, 429, 503].includes(step.status)) {
            final = 'failed';
            break;
          }
          lastIds.push(lastIds.at(-1));
          continue;
        }
        let last = lastIds.at(-1) || 'baseline';
        for (let j = 0; j < step.batches; j++) {
          counter++;
          want.push(`c${counter}`);
          last = `c${counter}`;
        }
        if (step.end === 'refresh-required') final = 'refresh-required';
        if (step.end === 'failure' || step.end === 'corrupt') final = 'failed';
        if (final !== 'live') break;
        lastIds.push(last);
      }
      const connections = final === 'live' ? script.length + 1 : lastIds.length;
      await waitFor(() => (final === 'live' ? calls.length >= connections && s.status === 'live' : s.status === final));
      s.close();
      assert.deepEqual(got, want);
      // A stalled event loop may make the watchdog replace the last, open connection:
      // such extra connections resume from the same cursor.
      if (final !== 'live') assert.equal(calls.length, connections);
      const sent = calls.map((call) => call.lastEventId);
      assert.deepEqual(sent.slice(0, connections), lastIds.slice(0, connections));
      for (const id of sent.slice(connections)) assert.equal(id, s.cursor);
      assert.equal(statuses[0], 'connecting');
      assert.equal(statuses.at(-1), final === 'live' ? 'closed' : final);
      for (const st of statuses.slice(1, -1)) assert.ok(st === 'live' || st === 'reconnecting', statuses.join(' '));
    }),
    { numRuns: 80 },
  );
});

async function waitFor(fn) {
  const deadline = Date.now() + 10_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('the stream did not reach the expected state');
    await new Promise((r) => setTimeout(r, 1));
  }
}

test('an error handler that closes the stream stops it: no further attempt', async () => {
  let calls = 0;
  const c = new DucktailClient({
    baseUrl: 'http://ducktail.invalid',
    token: 't',
    fetch: async () => {
      calls++;
      throw new TypeError('fetch failed');
    },
    backoff: { baseMs: 1, capMs: 1 },
  });
  const s = c.stream('t');
  const statuses = [];
  s.subscribe({ status: (st) => statuses.push(st), error: () => s.close() });
  await waitFor(() => s.status === 'closed');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(calls, 1);
  assert.deepEqual(statuses, ['connecting', 'closed']);
});

test('a liveQuery closed by its error handler makes no further attempt', async () => {
  let calls = 0;
  const c = new DucktailClient({
    baseUrl: 'http://ducktail.invalid',
    token: 't',
    fetch: async () => {
      calls++;
      throw new TypeError('fetch failed');
    },
    backoff: { baseMs: 1, capMs: 1 },
  });
  const lq = c.liveQuery('t', { onError: () => lq.close() });
  await waitFor(() => lq.status === 'closed');
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(calls, 1);
});

test('time spent processing an event is not silence: a slow iterator keeps its connection', async () => {
  const calls = [];
  let beat;
  const c = new DucktailClient({
    baseUrl: 'http://ducktail.invalid',
    token: 't',
    heartbeatIntervalMs: 50,
    heartbeatSlackMs: 100,
    fetch: async (url, init) => {
      calls.push(url);
      let text = `event: schema\nid: c0\ndata: ${SCHEMA}\n\n`;
      for (let i = 1; i <= 3; i++) text += `event: batch\nid: c${i}\ndata: ${batchPayload(i)}\n\n`;
      const body = new ReadableStream({
        start(ctl) {
          ctl.enqueue(new TextEncoder().encode(text));
          beat = setInterval(() => ctl.enqueue(new TextEncoder().encode(': beat\n')), 10);
          init.signal.addEventListener('abort', () => {
            clearInterval(beat);
            ctl.error(new Error('aborted'));
          }, { once: true });
        },
      });
      return new Response(body, { status: 200 });
    },
  });
  const s = c.stream('t');
  const got = [];
  for await (const ev of s) {
    // Each event takes more than twice the silence limit to process.
    await new Promise((r) => setTimeout(r, 400));
    got.push(ev.cursor);
    if (got.length === 4) break;
  }
  s.close();
  assert.deepEqual(got, ['c0', 'c1', 'c2', 'c3']);
  assert.equal(calls.length, 1);
});
