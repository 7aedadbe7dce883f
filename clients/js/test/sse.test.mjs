// The SSE parser against WHATWG HTML, "Interpreting an event stream": one input per rule,
// and a property: any stream, with any line ends, split anywhere, parses the same.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SSEParser } from '../dist/index.js';

/** Parses pieces in order; returns the events and the retry values. */
function parse(pieces) {
  const events = [];
  const retries = [];
  const p = new SSEParser((e) => events.push(e), (ms) => retries.push(ms));
  for (const piece of pieces) p.push(piece);
  p.end();
  return { events, retries, lastEventId: p.lastEventId };
}

const cases = [
  ['LF', 'event: batch\nid: c1\ndata: x\n\n', [{ type: 'batch', id: 'c1', data: 'x' }]],
  ['CRLF', 'event: batch\r\nid: c1\r\ndata: x\r\n\r\n', [{ type: 'batch', id: 'c1', data: 'x' }]],
  ['CR', 'event: batch\rid: c1\rdata: x\r\r', [{ type: 'batch', id: 'c1', data: 'x' }]],
  ['mixed line ends', 'data: a\r\ndata: b\rdata: c\n\r\n', [{ type: 'message', id: '', data: 'a\nb\nc' }]],
  ['a BOM is dropped once', '\ufeffdata: a\n\n\ufeffdata: b\n\n', [{ type: 'message', id: '', data: 'a' }]],
  ['comments are ignored', ': ducktail stream\n:\ndata: a\n\n', [{ type: 'message', id: '', data: 'a' }]],
  ['one space after the colon is removed, not two', 'data:  a\ndata:b\n\n', [{ type: 'message', id: '', data: ' a\nb' }]],
  ['a field without a colon has an empty value', 'data\ndata\n\n', [{ type: 'message', id: '', data: '\n' }]],
  ['an empty data line dispatches an empty event', 'event: heartbeat\ndata:\n\n', [{ type: 'heartbeat', id: '', data: '' }]],
  ['no data, no event', 'event: x\n\ndata: y\n\n', [{ type: 'message', id: '', data: 'y' }]],
  ['the id persists', 'id: 1\ndata: a\n\ndata: b\n\n', [{ type: 'message', id: '1', data: 'a' }, { type: 'message', id: '1', data: 'b' }]],
  ['an empty id clears it', 'id: 1\ndata: a\n\nid\ndata: b\n\n', [{ type: 'message', id: '1', data: 'a' }, { type: 'message', id: '', data: 'b' }]],
  ['an id with NUL is ignored', 'id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n', [{ type: 'message', id: '1', data: 'a' }, { type: 'message', id: '1', data: 'b' }]],
  ['unknown fields are ignored', 'foo: bar\ndata: a\n\n', [{ type: 'message', id: '', data: 'a' }]],
  ['an event cut before its blank line is discarded', 'data: a\n\ndata: b\n', [{ type: 'message', id: '', data: 'a' }]],
  ['the event type resets after dispatch', 'event: batch\ndata: a\n\ndata: b\n\n', [{ type: 'batch', id: '', data: 'a' }, { type: 'message', id: '', data: 'b' }]],
];

for (const [name, input, want] of cases) {
  test(`SSE: ${name}`, () => {
    assert.deepEqual(parse([input]).events, want);
  });
}

test('SSE: retry sets the reconnection time only when all digits', () => {
  assert.deepEqual(parse(['retry: 2731\n\nretry: 12a\nretry: -1\nretry:\nretry: 0\n\n']).retries, [2731, 0]);
});

test('SSE: an event ending in CR is dispatched without waiting for the next piece', () => {
  const events = [];
  const p = new SSEParser((e) => events.push(e));
  p.push('data: a\r\r');
  assert.equal(events.length, 1);
  p.push('\ndata: b\r\n\r\n');
  assert.deepEqual(events.map((e) => e.data), ['a', 'b']);
});

/** An event stream as the server could write it, with the events it holds. */
const streams = fc
  .array(
    fc.record({
      type: fc.constantFrom('schema', 'batch', 'heartbeat', 'refresh-required'),
      id: fc.option(fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/), { nil: undefined }),
      data: fc.array(fc.stringMatching(/^[^\r\n]{0,30}$/), { minLength: 1, maxLength: 3 }),
      comment: fc.boolean(),
    }),
    { maxLength: 8 },
  )
  .map((evs) => {
    let text = '';
    let id = '';
    const want = [];
    for (const e of evs) {
      if (e.comment) text += ': keepalive\n';
      text += `event: ${e.type}\n`;
      if (e.id !== undefined) {
        text += `id: ${e.id}\n`;
        id = e.id;
      }
      for (const d of e.data) text += `data: ${d}\n`;
      text += '\n';
      want.push({ type: e.type, id, data: e.data.join('\n') });
    }
    return { text, want };
  });

test('SSE property: any line ends, split anywhere, give the same events', () => {
  fc.assert(
    fc.property(streams, fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 20 }), ({ text, want }, end, cuts) => {
      const input = text.replace(/\n/g, end);
      const at = [...new Set(cuts.map((c) => c % (input.length + 1)))].sort((a, b) => a - b);
      const pieces = [];
      let prev = 0;
      for (const c of at) {
        pieces.push(input.slice(prev, c));
        prev = c;
      }
      pieces.push(input.slice(prev));
      assert.deepEqual(parse(pieces).events, want);
    }),
    { numRuns: 500 },
  );
});
