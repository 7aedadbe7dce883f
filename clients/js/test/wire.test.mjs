// The wire fixture shared with the Go client's tests (api/client/wire_fixture_internal_test.go):
// testdata/wire/stream.sse, bytes captured from a real server, must parse and decode to
// testdata/wire/stream.json, with any line ends and split anywhere; and a DucktailStream
// reading those bytes delivers its events and ends with refresh-required.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { tableFromIPC } from 'apache-arrow';
import { DucktailClient, RefreshRequiredError, SSEParser, toObjects } from '../dist/index.js';

const dir = new URL('../../../testdata/wire/', import.meta.url);
const raw = readFileSync(new URL('stream.sse', dir), 'utf8');
const want = JSON.parse(readFileSync(new URL('stream.json', dir), 'utf8'));

/** The fixture's rendering of a value: its exact text, or null. */
const text = (v) => (v === null ? null : String(v));

function decode(pieces) {
  const events = [];
  let retry = null;
  const p = new SSEParser((e) => {
    const ev = { event: e.type, id: e.id };
    if (e.type === 'schema' || e.type === 'batch') {
      const t = tableFromIPC(Buffer.from(e.data, 'base64'));
      ev.columns = t.schema.fields.map((f) => f.name);
      ev.rows = toObjects(t).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, text(v)])));
    } else if (e.data) {
      ev.data = JSON.parse(e.data);
    }
    events.push(ev);
  }, (ms) => (retry = ms));
  for (const piece of pieces) p.push(piece);
  p.end();
  return { retry_ms: retry, events };
}

test('the wire fixture decodes to what stream.json lists, with any line ends, split anywhere', () => {
  assert.deepEqual(decode([raw]), want);
  fc.assert(
    fc.property(fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(raw.length), { maxLength: 30 }), (end, cuts) => {
      const input = raw.replace(/\n/g, end);
      const at = [...new Set(cuts)].map((c) => Math.min(c, input.length)).sort((a, b) => a - b);
      const pieces = at.map((c, i) => input.slice(i === 0 ? 0 : at[i - 1], c));
      pieces.push(input.slice(at.at(-1) ?? 0));
      assert.deepEqual(decode(pieces), want);
    }),
    { numRuns: 100 },
  );
});

test('a stream reading the fixture delivers its schema and batches, then stops at refresh-required', async () => {
  const bytes = new TextEncoder().encode(raw);
  const c = new DucktailClient({
    baseUrl: 'http://ducktail.invalid',
    token: 't',
    fetch: async () => new Response(new Blob([bytes]).stream(), { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
  });
  const s = c.stream('readings');
  const got = [];
  let thrown = null;
  try {
    for await (const ev of s) got.push({ type: ev.type, cursor: ev.cursor, rows: ev.rows.numRows });
  } catch (err) {
    thrown = err;
  }
  const events = want.events.filter((e) => e.event === 'schema' || e.event === 'batch');
  assert.deepEqual(got, events.map((e) => ({ type: e.event, cursor: e.id, rows: e.rows.length })));
  assert.ok(thrown instanceof RefreshRequiredError && thrown.reason === 'table_reset', String(thrown));
  assert.equal(s.status, 'refresh-required');
  assert.equal(s.cursor, events.at(-1).id);
});
