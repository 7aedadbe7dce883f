// A page that uses @ducktail/client directly, for cmd/ducktail TestBrowserClientPackage:
// a liveQuery of the table named in the fragment (#api=…&token=…&table=…), with the
// token in Authorization and the cursor in Last-Event-ID (so across origins every stream
// request is preflighted). It renders what the test driver (browser.mjs) reads: the
// status, the row count, the cursor, an event log, and the newest 200 rows, newest first,
// keyed by their position, with their cells as toObjects gives them.
import { DucktailClient, toObjects } from '@ducktail/client';

const params = new URLSearchParams(location.hash.slice(1));
const $ = (id) => document.getElementById(id);
const note = (text) => {
  const li = document.createElement('li');
  li.textContent = text;
  $('notices').prepend(li);
};

const client = new DucktailClient({ baseUrl: params.get('api'), token: params.get('token') });
const lq = client.liveQuery(params.get('table'), {
  onStatus: (status, detail) => {
    note(`status ${status}${detail.reason ? ` (${detail.reason})` : ''}`);
    $('status').dataset.status = status;
    $('status').textContent = status;
  },
  onError: (err) => note(`error ${err.name}: ${err.message}`),
});

lq.subscribe(() => {
  const { rows, cursor } = lq.getSnapshot();
  const n = rows?.numRows ?? 0;
  $('row-count').dataset.count = String(n);
  $('row-count').textContent = String(n);
  $('cursor').textContent = cursor;
  if (!rows) return;
  const head = document.createElement('tr');
  for (const name of ['#', ...rows.schema.fields.map((f) => f.name)]) {
    const th = document.createElement('th');
    th.textContent = name;
    head.append(th);
  }
  $('rows').tHead.replaceChildren(head);
  const newest = toObjects(rows.slice(Math.max(0, n - 200)));
  const trs = newest.map((row, i) => {
    const tr = document.createElement('tr');
    const key = n - newest.length + i + 1;
    tr.dataset.key = String(key);
    const th = document.createElement('th');
    th.textContent = String(key);
    tr.append(th);
    for (const v of Object.values(row)) {
      const td = document.createElement('td');
      td.textContent = v === null ? 'NULL' : String(v);
      tr.append(td);
    }
    return tr;
  });
  $('rows').tBodies[0].replaceChildren(...trs.reverse());
});
