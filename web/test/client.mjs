// A Node.js stream consumer written only with npm packages: `eventsource` (the
// EventSource polyfill) subscribes, `apache-arrow` decodes every payload. For the Go
// test cmd/ducktail TestNodeEventSourceClient, which sets DUCKTAIL_STREAM_URL (the
// /stream/{token} URL) and DUCKTAIL_BATCHES (how many batch events to read before
// closing) and trusts the server's certificate through NODE_EXTRA_CA_CERTS.
//
// It prints one JSON line per event. schema and batch:
//   {"event", "id", "fields": [{"name", "type", "nullable"}], "num_rows", "rows": [{column: value}]}
// with values as JSON: 64-bit integers and decimals as strings, dates as "YYYY-MM-DD",
// timestamps as ISO 8601 in UTC. Terminal events and errors print {"event", "data"} and
// exit with status 1.
import { DateUnit, Type, tableFromIPC, util } from 'apache-arrow';
import { EventSource } from 'eventsource';

const url = process.env.DUCKTAIL_STREAM_URL;
const want = Number(process.env.DUCKTAIL_BATCHES);
const print = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

function jsonValue(type, v) {
  if (v === null || v === undefined) return null;
  switch (type.typeId) {
    case Type.Date:
      return new Date(v).toISOString().slice(0, type.unit === DateUnit.DAY ? 10 : undefined);
    case Type.Timestamp:
      return new Date(v).toISOString();
    case Type.Decimal: {
      const n = util.bigNumToBigInt(v);
      const digits = (n < 0n ? -n : n).toString().padStart(type.scale + 1, '0');
      const sign = n < 0n ? '-' : '';
      return type.scale ? `${sign}${digits.slice(0, -type.scale)}.${digits.slice(-type.scale)}` : sign + digits;
    }
  }
  return typeof v === 'bigint' ? v.toString() : v;
}

function decode(ev) {
  const table = tableFromIPC(Buffer.from(ev.data, 'base64'));
  const fields = table.schema.fields;
  const rows = [];
  for (let r = 0; r < table.numRows; r++) {
    rows.push(Object.fromEntries(fields.map((f, c) => [f.name, jsonValue(f.type, table.getChildAt(c).get(r))])));
  }
  return {
    event: ev.type,
    id: ev.lastEventId,
    fields: fields.map((f) => ({ name: f.name, type: String(f.type), nullable: f.nullable })),
    num_rows: table.numRows,
    rows,
  };
}

const es = new EventSource(url);
let batches = 0;
const stop = (code) => {
  es.close();
  process.exitCode = code;
};
es.addEventListener('schema', (ev) => print(decode(ev)));
es.addEventListener('batch', (ev) => {
  print(decode(ev));
  if (++batches === want) stop(0);
});
for (const event of ['refresh-required', 'reconnect', 'failure']) {
  es.addEventListener(event, (ev) => {
    print({ event, data: ev.data });
    stop(1);
  });
}
es.addEventListener('error', (err) => {
  print({ event: 'error', data: `${err.message ?? ''} ${err.code ?? ''}`.trim() });
  stop(1);
});
