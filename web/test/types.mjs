// Reads a table of every column type with apache-arrow alone, for the Go test cmd/ducktail
// TestNodeDecodesEveryType: subscribes to DUCKTAIL_STREAM_URL (a /stream/{token} URL) and
// prints {"event":"ready"} on the schema event; prints the rows of the first batch event as
// {"event":"batch","rows":[…]}; then fetches DUCKTAIL_SNAPSHOT_URL (Arrow IPC, with the
// bearer token DUCKTAIL_TOKEN) and prints {"event":"snapshot","rows":[…]}. Values are
// values.mjs's JSON. The server's certificate is trusted through NODE_EXTRA_CA_CERTS.
import { tableFromIPC } from 'apache-arrow';
import { EventSource } from 'eventsource';
import { rowsOf } from './values.mjs';

const print = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const es = new EventSource(process.env.DUCKTAIL_STREAM_URL);
es.addEventListener('schema', () => print({ event: 'ready' }));
es.addEventListener('batch', async (ev) => {
  es.close();
  print({ event: 'batch', rows: rowsOf(tableFromIPC(Buffer.from(ev.data, 'base64'))) });
  const res = await fetch(process.env.DUCKTAIL_SNAPSHOT_URL, {
    headers: { Authorization: `Bearer ${process.env.DUCKTAIL_TOKEN}`, Accept: 'application/vnd.apache.arrow.stream' },
  });
  if (!res.ok) {
    print({ event: 'error', data: `snapshot: ${res.status} ${await res.text()}` });
    process.exitCode = 1;
    return;
  }
  print({ event: 'snapshot', rows: rowsOf(tableFromIPC(new Uint8Array(await res.arrayBuffer()))) });
});
for (const event of ['refresh-required', 'reconnect', 'failure', 'error']) {
  es.addEventListener(event, (ev) => {
    print({ event: 'error', data: `${event} ${ev.data ?? ev.message ?? ''}` });
    es.close();
    process.exitCode = 1;
  });
}
