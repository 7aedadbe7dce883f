// Follows a table with liveQuery and prints each change: the README's five-minute example.
// DUCKTAIL_URL (default https://localhost:8443), DUCKTAIL_TOKEN (default: the contents of
// data/admin.token), DUCKTAIL_TABLE (default weather); DUCKTAIL_CHANGES=n exits after n
// changes. Over TLS with make run's self-signed certificate, start it with
// NODE_EXTRA_CA_CERTS=data/tls/cert.pem.
import { readFileSync } from 'node:fs';
import { DucktailClient, toObjects } from '@ducktail/client';

const client = new DucktailClient({
  baseUrl: process.env.DUCKTAIL_URL ?? 'https://localhost:8443',
  token: process.env.DUCKTAIL_TOKEN ?? readFileSync('data/admin.token', 'utf8').trim(),
});
const stopAfter = Number(process.env.DUCKTAIL_CHANGES ?? Infinity);
let changes = 0;

const weather = client.liveQuery(process.env.DUCKTAIL_TABLE ?? 'weather', {
  onChange(change) {
    const added = change.kind === 'batch' ? toObjects(change.batch) : [];
    console.log(`${change.kind}${change.reason ? ` (${change.reason})` : ''}: ${change.rows.numRows} rows, cursor ${change.cursor}`);
    for (const row of added) console.log('  +', row);
    if (++changes >= stopAfter) weather.close();
  },
  onStatus: (status, detail) => console.log(`status ${status}${detail.reason ? ` (${detail.reason})` : ''}`),
  onError: (err) => console.error(`error: ${err.message}`),
});
