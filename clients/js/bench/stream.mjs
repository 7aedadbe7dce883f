// Benchmarks of @ducktail/client (npm run bench, after make build and npm run build):
//   1. events/s and rows/s one stream decodes: COMMITS commits of 1,000 rows and 10
//      columns, replayed by a real ducktail serve from the table's first cursor, and the
//      same bytes fed from memory (the client alone, no server or network);
//   2. liveQuery's memory per 100k rows held: heap and ArrayBuffers after a liveQuery
//      took in 100k rows as a snapshot, then 100k more as 100 batches.
// Run it with --expose-gc for the memory numbers.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DucktailClient, toObjects } from '../dist/index.js';
import { binary } from '../test/harness.mjs';

const COMMITS = Number(process.env.COMMITS ?? 300);
const ROWS = 1_000;
const port = 18_000 + Math.floor(Math.random() * 1_000);
const url = `http://127.0.0.1:${port}`;
const dir = mkdtempSync(join(tmpdir(), 'ducktail-bench-'));
const server = spawn(binary, ['serve', '--plaintext', '--addr', `127.0.0.1:${port}`, '--data-dir', dir, '--log-level', 'error'], { stdio: 'ignore' });

try {
  await waitReady();
  const token = readFileSync(join(dir, 'admin.token'), 'utf8').trim();
  const api = (path, body) =>
    fetch(url + path, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const columns = [
    ['id', 'BIGINT'], ['at', 'TIMESTAMP'], ['a', 'DOUBLE'], ['b', 'DOUBLE'], ['c', 'INTEGER'],
    ['d', 'VARCHAR'], ['e', 'BOOLEAN'], ['f', 'DECIMAL(9,2)'], ['g', 'DATE'], ['h', 'BIGINT'],
  ].map(([name, type]) => ({ name, type }));
  let next = 0;
  const commit = async (table) => {
    const rows = Array.from({ length: ROWS }, () => {
      const i = next++;
      return { id: i, at: new Date(1_700_000_000_000 + i * 1000).toISOString(), a: i / 3, b: Math.sqrt(i), c: i % 1000, d: `station ${i % 97}`, e: i % 2 === 0, f: (i % 10_000) / 100, g: '2024-01-01', h: i * 7 };
    });
    const res = await api(`/v1/tables/${table}/rows`, rows);
    if (res.status !== 201) throw new Error(`ingest: ${res.status} ${await res.text()}`);
    return (await res.json()).cursor;
  };
  const client = new DucktailClient({ baseUrl: url, token });

  // 1. One stream replaying COMMITS commits.
  await api('/v1/tables', { name: 'bench', columns });
  const start = await commit('bench');
  for (let i = 1; i < COMMITS; i++) await commit('bench');
  const replayed = COMMITS - 1;
  const live = await measure(client, 'bench', start, replayed, false);
  const exact = await measure(client, 'bench', start, replayed, true);
  const wire = await capture(url, token, start, replayed);
  const memory = await measure(memoryClient(wire), 'bench', start, replayed, false);
  const report = (what, r) =>
    console.log(`${what}: ${replayed} events of ${ROWS} rows x 10 columns in ${r.ms.toFixed(0)} ms: ` +
      `${((replayed / r.ms) * 1000).toFixed(0)} events/s, ${((replayed * ROWS / r.ms) * 1000 / 1e6).toFixed(2)} M rows/s`);
  report('stream from ducktail serve (replay), Arrow tables', live);
  report('stream from ducktail serve (replay), Arrow tables + toObjects', exact);
  report(`stream from memory (${(wire.length / 1e6).toFixed(1)} MB of SSE), Arrow tables`, memory);

  // 2. liveQuery memory: 100k rows by snapshot, then 100k more by batches.
  await api('/v1/tables', { name: 'held', columns });
  next = 0;
  for (let i = 0; i < 100; i++) await commit('held');
  const before = usage();
  const lq = client.liveQuery('held');
  await until(() => lq.status === 'live' && lq.rows?.numRows === 100_000);
  const snap = usage();
  for (let i = 0; i < 100; i++) await commit('held');
  await until(() => lq.rows?.numRows === 200_000);
  const both = usage();
  lq.close();
  const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
  console.log(`liveQuery, 100k rows x 10 columns from one snapshot: +${mb(snap.heap - before.heap)} heap, +${mb(snap.buffers - before.buffers)} ArrayBuffers`);
  console.log(`liveQuery, 100k more rows as 100 batches of 1,000: +${mb(both.heap - snap.heap)} heap, +${mb(both.buffers - snap.buffers)} ArrayBuffers`);
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}

/** Streams n batches from cursor; with objects, also reads every row with toObjects. */
async function measure(client, table, cursor, n, objects) {
  const s = client.stream(table, { cursor });
  let batches = 0;
  let rows = 0;
  const t0 = performance.now();
  for await (const ev of s) {
    if (ev.type !== 'batch') continue;
    rows += objects ? toObjects(ev.rows).length : ev.rows.numRows;
    if (++batches === n) break;
  }
  const ms = performance.now() - t0;
  s.close();
  if (rows !== n * ROWS) throw new Error(`${rows} rows, want ${n * ROWS}`);
  return { ms };
}

/** The SSE bytes of n batches after cursor, as the server sends them. */
async function capture(url, token, cursor, n) {
  const res = await fetch(`${url}/v1/tables/bench/stream`, { headers: { Authorization: `Bearer ${token}`, 'Last-Event-ID': cursor } });
  const reader = res.body.getReader();
  const chunks = [];
  let text = '';
  while ((text.match(/\nevent: batch\n/g) ?? []).length < n || !text.endsWith('\n\n')) {
    const { value } = await reader.read();
    chunks.push(value);
    text += new TextDecoder().decode(value);
  }
  reader.cancel();
  return Buffer.concat(chunks);
}

/** A client whose fetch answers every stream with bytes, in 64 KiB pieces. */
function memoryClient(bytes) {
  return new DucktailClient({
    baseUrl: 'http://memory.invalid',
    token: 't',
    fetch: async () =>
      new Response(new ReadableStream({
        start(c) {
          for (let i = 0; i < bytes.length; i += 65_536) c.enqueue(bytes.subarray(i, i + 65_536));
        },
      }), { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
  });
}

function usage() {
  globalThis.gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, buffers: m.arrayBuffers };
}

async function waitReady() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('ducktail serve did not become ready');
}

async function until(fn) {
  while (!fn()) await new Promise((r) => setTimeout(r, 10));
}
