// A real ducktail server for the Node.js tests: bin/ducktail serve --plaintext on a
// loopback port, in a temporary data directory, that a test can kill -9 and start
// again on the same port and data. Without bin/ducktail (make build) the tests skip,
// unless DUCKTAIL_REQUIRE_NODE=1 (CI), where they fail.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const binary = process.env.DUCKTAIL_BIN || resolve(here, '../../../bin/ducktail');

/** The reason to skip the server tests, or false; throws when CI requires them. */
export function skipServer() {
  if (existsSync(binary)) return false;
  const why = `${binary} is missing; run make build`;
  if (process.env.DUCKTAIL_REQUIRE_NODE === '1') throw new Error(`${why} (required: DUCKTAIL_REQUIRE_NODE=1)`);
  return `${why} (set DUCKTAIL_REQUIRE_NODE=1 to fail instead)`;
}

async function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** Resolves once fn() returns a truthy value (polled every 20 ms); rejects after timeoutMs. */
export async function until(fn, timeoutMs = 20_000, what = 'the condition') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Starts a server; extra are more serve flags. The heartbeat is 300 ms and the drain
 * short, so that the tests' reconnections are quick. Plaintext unless opts.tls (then with
 * its self-signed certificate, data/tls/cert.pem, and fetch of this process does not
 * trust it). The returned object's url stays the same across kill9/start.
 */
export async function startServer(t, extra = [], opts = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'ducktail-js-'));
  const port = await freePort();
  const url = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  let child = null;
  let log = '';
  const server = {
    url,
    dir,
    token: '',
    get log() {
      return log;
    },
    async start() {
      child = spawn(binary, [
        'serve', ...(opts.tls ? [] : ['--plaintext']), '--addr', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'),
        '--heartbeat-interval', '300ms', '--retry', '100ms', '--drain-timeout', '2s', '--log-level', 'warn',
        ...extra,
      ], { stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise((r) => child.once('exit', r));
      child.exited = exited;
      child.stdout.on('data', (b) => (log += b));
      child.stderr.on('data', (b) => (log += b));
      await until(async () => {
        if (child.exitCode !== null) throw new Error(`ducktail serve exited: ${log}`);
        try {
          return (await send('GET', '/readyz')).status === 200;
        } catch {
          return false;
        }
      }, 30_000, 'ducktail serve to be ready');
      server.token = readFileSync(join(dir, 'data', 'admin.token'), 'utf8').trim();
    },
    /** kill -9: no drain, no goodbye to the streams. */
    async kill9() {
      child.kill('SIGKILL');
      await child.exited;
    },
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await child.exited;
      }
    },
    /** Sends a request with the admin token; returns the status and the parsed JSON body. */
    async api(method, path, body, contentType = 'application/json') {
      const headers = { Authorization: `Bearer ${server.token}`, ...(body === undefined ? {} : { 'Content-Type': contentType }) };
      const res = await send(method, path, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), headers);
      let json = null;
      try {
        json = JSON.parse(res.text);
      } catch {
        json = res.text;
      }
      return { status: res.status, body: json };
    },
    /** Commits rows (JSON objects) into table, creating it; returns the commit's cursor. */
    async ingest(table, rows) {
      const r = await server.api('POST', `/v1/tables/${table}/rows?create=true`, rows);
      if (r.status !== 201) throw new Error(`ingest into ${table}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.cursor;
    },
  };
  /** One request with node:http(s), which, unlike fetch, can trust the self-signed certificate. */
  function send(method, path, body, headers = {}) {
    const ca = opts.tls ? readFileSync(join(dir, 'data', 'tls', 'cert.pem')) : undefined;
    return new Promise((ok, fail) => {
      const req = (opts.tls ? httpsRequest : httpRequest)(url + path, { method, headers, ca }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => ok({ status: res.statusCode, text }));
        res.on('error', fail);
      });
      req.on('error', fail);
      req.end(body);
    });
  }
  t.after(async () => {
    await server.stop();
    if (process.env.DUCKTAIL_TEST_LOG) console.error(`server log:\n${log}`);
    rmSync(dir, { recursive: true, force: true });
  });
  await server.start();
  return server;
}
