// The README's five-minute example (examples/follow.mjs) run as a user would: its own
// Node.js process, against a TLS server with its self-signed certificate trusted through
// NODE_EXTRA_CA_CERTS, as with make run.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { skipServer, startServer, until } from './harness.mjs';

const skip = skipServer();
const example = fileURLToPath(new URL('../examples/follow.mjs', import.meta.url));

test('the README example follows a table over TLS with NODE_EXTRA_CA_CERTS', { skip }, async (t) => {
  const srv = await startServer(t, [], { tls: true });
  await srv.ingest('weather', [{ date: '2015-12-31', temp_max: 5.6 }]);
  const child = spawn(process.execPath, [example], {
    cwd: srv.dir,
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: join(srv.dir, 'data', 'tls', 'cert.pem'),
      DUCKTAIL_URL: srv.url.replace('127.0.0.1', 'localhost'),
      DUCKTAIL_CHANGES: '2',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const exited = new Promise((r) => child.once('exit', r));
  t.after(() => child.kill());
  await until(() => out.includes('status live'), 20_000, `the example to be live; it printed:\n${out}`);
  await srv.ingest('weather', [{ date: '2016-01-01', temp_max: 7.2 }]);
  assert.equal(await exited, 0, out);
  assert.match(out, /^snapshot: 1 rows, cursor r1\./m);
  assert.match(out, /^batch: 2 rows, cursor r1\./m);
  assert.match(out, /\+ \{ date: '2016-01-01', temp_max: 7\.2 \}/);
  assert.doesNotMatch(out, /error:/);
});
