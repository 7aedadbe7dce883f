// The live table page: connection form with the shape (a filter and a column picker),
// status, chart, rows and the event log. The
// URL fragment may carry the settings (#api=…&token=…&table=…&start=live); the token is
// removed from the address bar once read.
import './style.css';
import { ApiError, listTables, normalizeBase, tableColumns } from './api.js';
import { formatValue, isNumeric, isTime, numericValue, sameSchema } from './arrow.js';
import { LiveChart, ROW_AXIS } from './chart.js';
import { LiveTable, Status } from './live.js';
import { RateMeter } from './rate.js';

/** Rows kept and rendered, newest first. */
const MAX_ROWS = 200;
/** Rows charted. */
const CHART_ROWS = 2000;
/** Entries kept in the event log. */
const MAX_NOTICES = 50;
/** How long the event log gathers batches into one line, in ms. */
const BATCH_LOG_MS = 1000;

const $ = (id) => document.getElementById(id);
const form = $('connect-form');
const apiInput = $('api');
const tokenInput = $('token');
const tableSelect = $('table');
const startSelect = $('start');
const whereInput = $('where');
const columnsBox = $('columns');
const connectButton = $('connect');
const disconnectButton = $('disconnect');
const errorBox = $('error');
const statusEl = $('status');
const countEl = $('row-count');
const rateEl = $('rate');
const cursorEl = $('cursor');
const chartSection = $('chart-section');
const chartSelect = $('chart-column');
const thead = $('rows').tHead;
const tbody = $('rows').tBodies[0];
const notices = $('notices');

const chart = new LiveChart($('chart'), CHART_ROWS);
const rate = new RateMeter();

/** What the page shows: the current schema and the latest rows, newest first. */
const view = {
  /** @type {import('apache-arrow').Schema | null} */
  schema: null,
  /** @type {{key: number, cells: Map<string, string|null>}[]} */
  rows: [],
  total: 0,
  headerStale: true,
  renderPending: false,
  /** The time column the chart's x-axis shows, or '' for the row number. */
  timeColumn: '',
};

/** The batches not yet in the event log: how many, their rows, the timer that logs them. */
const unlogged = { batches: 0, rows: 0, timer: 0 };

/** @type {LiveTable | null} */
let live = null;
/** Counts connect() calls, so that a slower earlier one gives way to a later one. */
let attempts = 0;
/** The table whose columns the picker shows, '' before one is loaded. */
let pickerTable = '';
/** The shape the current load reads through, as shapeKey gives it. */
let liveShape = '';

function setStatus(status, detail) {
  statusEl.dataset.status = status;
  statusEl.textContent = detail ? `${status} (${detail})` : status;
  const closed = status === Status.CLOSED;
  disconnectButton.disabled = closed;
  // The primary button is the next thing to do: connect, or disconnect while connected.
  connectButton.classList.toggle('primary', closed);
  disconnectButton.classList.toggle('primary', !closed);
}

/** Adds an entry to the event log, after the line for the batches before it. */
function note(level, text) {
  logBatches();
  append(level, text);
}

/** Counts a batch into the log's next "N batches, M rows" line, written a second after the first. */
function noteBatch(rows) {
  unlogged.batches++;
  unlogged.rows += rows;
  if (!unlogged.timer) unlogged.timer = setTimeout(logBatches, BATCH_LOG_MS);
}

function logBatches() {
  clearTimeout(unlogged.timer);
  const { batches, rows } = unlogged;
  Object.assign(unlogged, { batches: 0, rows: 0, timer: 0 });
  if (batches) append('info', `${plural(batches, 'batch', 'batches')}, ${plural(rows, 'row', 'rows')}.`);
}

function plural(n, one, many) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

function append(level, text) {
  const li = document.createElement('li');
  li.className = level;
  const time = document.createElement('time');
  const now = new Date();
  time.dateTime = now.toISOString();
  time.textContent = now.toLocaleTimeString();
  li.append(time, ' ', text);
  notices.prepend(li);
  while (notices.children.length > MAX_NOTICES) notices.lastElementChild.remove();
}

function showError(text) {
  errorBox.textContent = text;
  errorBox.hidden = false;
  note('error', text);
}

function clearError() {
  errorBox.textContent = '';
  errorBox.hidden = true;
}

/** Replaces the shown rows by the snapshot's. */
function onSnapshot(table, cursor) {
  view.rows = [];
  view.total = 0;
  rate.reset();
  setSchema(table.schema, true);
  addRows(table, false);
  cursorEl.textContent = cursor;
  note('info', `Snapshot of ${table.numRows.toLocaleString()} rows.`);
}

function onSchema(schema, cursor) {
  if (!view.schema || !sameSchema(view.schema, schema)) {
    if (view.schema) note('info', 'The table schema changed.');
    setSchema(schema, !view.schema);
  }
  cursorEl.textContent = cursor;
}

function onBatch(table, cursor) {
  addRows(table, true);
  noteBatch(table.numRows);
  cursorEl.textContent = cursor;
}

function setSchema(schema, resetChart) {
  view.schema = schema;
  view.headerStale = true;
  const numeric = schema.fields.filter((f) => isNumeric(f.type)).map((f) => f.name);
  const time = schema.fields.find((f) => isTime(f.type));
  if (resetChart || (time?.name ?? '') !== view.timeColumn) {
    view.timeColumn = time?.name ?? '';
    chart.reset(numeric, time ? timeAxis(time) : ROW_AXIS);
  } else {
    chart.addColumns(numeric);
  }
  if (numeric.length && !numeric.includes(chart.column)) chart.show(numeric[0]);
  chartSelect.replaceChildren(...numeric.map((n) => new Option(n, n, false, n === chart.column)));
  chartSelect.disabled = numeric.length === 0;
  scheduleRender();
}

/**
 * The chart's x-axis for a DATE or TIMESTAMP column: seconds since the epoch, shown in the
 * legend as the rows show the column.
 * @param {import('apache-arrow').Field} field
 */
function timeAxis(field) {
  return { label: field.name, time: true, format: (x) => formatValue(field.type, x * 1000) };
}

/**
 * Adds the rows of a snapshot or a batch: numbered, kept for the table and the chart.
 * Rows are charted in arrival order, at their time when the x-axis is a time column
 * (rows without one are left out of the chart), else at their number.
 */
function addRows(table, counted) {
  const n = table.numRows;
  const fields = table.schema.fields;
  const vectors = fields.map((_, i) => table.getChildAt(i));
  const first = view.total;
  const numeric = fields.map((f) => isNumeric(f.type));
  const timeIdx = view.timeColumn ? fields.findIndex((f) => f.name === view.timeColumn) : -1;
  for (let r = Math.max(0, n - CHART_ROWS); r < n; r++) {
    const x = timeIdx < 0 ? first + r + 1 : vectors[timeIdx].get(r);
    if (x === null || x === undefined) continue;
    const values = new Map();
    fields.forEach((f, c) => {
      if (numeric[c]) values.set(f.name, numericValue(f.type, vectors[c].get(r)));
    });
    chart.push(timeIdx < 0 ? x : x / 1000, values);
  }
  for (let r = Math.max(0, n - MAX_ROWS); r < n; r++) {
    const cells = new Map(fields.map((f, c) => [f.name, formatValue(f.type, vectors[c].get(r))]));
    view.rows.unshift({ key: first + r + 1, cells });
  }
  view.rows.length = Math.min(view.rows.length, MAX_ROWS);
  view.total += n;
  if (counted && n > 0) rate.add(n);
  scheduleRender();
}

function scheduleRender() {
  if (view.renderPending) return;
  view.renderPending = true;
  requestAnimationFrame(render);
}

function render() {
  view.renderPending = false;
  const fields = view.schema?.fields ?? [];
  if (view.headerStale) {
    view.headerStale = false;
    const tr = document.createElement('tr');
    for (const name of ['#', ...fields.map((f) => f.name)]) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = name;
      tr.append(th);
    }
    thead.replaceChildren(tr);
  }
  const rows = view.rows.map(({ key, cells }) => {
    const tr = document.createElement('tr');
    tr.dataset.key = String(key);
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = key.toLocaleString();
    tr.append(th);
    for (const f of fields) {
      const td = document.createElement('td');
      const text = cells.get(f.name);
      if (text === null || text === undefined) {
        td.className = 'null';
        td.textContent = 'NULL';
      } else {
        td.textContent = text;
      }
      tr.append(td);
    }
    return tr;
  });
  tbody.replaceChildren(...rows);
  countEl.dataset.count = String(view.total);
  countEl.textContent = view.total.toLocaleString();
  showRate();
  chart.flush();
  chartSection.hidden = !chart.column;
}

function showRate() {
  rateEl.textContent = rate.perSecond().toLocaleString(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
}

async function loadTables() {
  const base = normalizeBase(apiInput.value);
  const token = tokenInput.value.trim();
  if (!base || !token) return;
  const wanted = tableSelect.value;
  const names = await listTables(base, token);
  tableSelect.replaceChildren(...names.map((n) => new Option(n, n, false, n === wanted)));
  if (names.length === 0) throw new ApiError('This token may see no table.');
}

/** Fills the column picker with the chosen table's columns, all picked, unless it shows them already. */
async function loadColumns() {
  const base = normalizeBase(apiInput.value);
  const token = tokenInput.value.trim();
  const table = tableSelect.value;
  if (!base || !token || !table || table === pickerTable) return;
  const names = await tableColumns(base, token, table);
  if (tableSelect.value !== table) return;
  pickerTable = table;
  columnsBox.replaceChildren(...names.map((name) => {
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = name;
    box.checked = true;
    const label = document.createElement('label');
    label.append(box, name);
    return label;
  }));
}

/**
 * The shape of the filter field and the column picker (docs/api.md, "Shapes"): no
 * columns when every one is picked; null when none is.
 * @returns {import('@ducktail/client').Shape | null}
 */
function currentShape() {
  const boxes = Array.from(columnsBox.querySelectorAll('input[type=checkbox]'));
  const picked = boxes.filter((b) => b.checked).map((b) => b.value);
  if (boxes.length > 0 && picked.length === 0) return null;
  const where = whereInput.value.trim();
  return {
    ...(where ? { where } : {}),
    ...(picked.length < boxes.length ? { columns: picked } : {}),
  };
}

function shapeKey(shape) {
  return JSON.stringify([shape?.where ?? '', shape?.columns ?? []]);
}

/** A change of the filter or the columns restarts the load, when there is one. */
function shapeChanged() {
  if (live && shapeKey(currentShape()) !== liveShape) connect();
}

async function connect() {
  const attempt = ++attempts;
  live?.stop();
  live = null;
  clearError();
  if (!tableSelect.value) {
    try {
      await loadTables();
    } catch (err) {
      if (attempt !== attempts) return;
      showError(err.message);
      setStatus(Status.CLOSED, '');
      return;
    }
    if (attempt !== attempts) return;
  }
  const table = tableSelect.value;
  if (!table) {
    showError('Give an API base URL and a stream token, then choose a table.');
    setStatus(Status.CLOSED, '');
    return;
  }
  // The picker is a convenience: without it the load reads every column, and a server
  // that refuses the page says why when the snapshot or the stream is refused.
  try {
    await loadColumns();
  } catch (err) {
    if (attempt !== attempts) return;
    note('warning', `${err.message} The column picker stays empty: every column is read.`);
  }
  if (attempt !== attempts) return;
  const shape = currentShape();
  if (!shape) {
    showError('Pick at least one column.');
    setStatus(Status.CLOSED, '');
    return;
  }
  liveShape = shapeKey(shape);
  cursorEl.textContent = '–';
  view.schema = null;
  view.rows = [];
  view.total = 0;
  view.timeColumn = '';
  chart.reset([], ROW_AXIS);
  rate.reset();
  scheduleRender();
  live = new LiveTable({
    base: normalizeBase(apiInput.value),
    token: tokenInput.value.trim(),
    table,
    shape,
    handlers: {
      status: setStatus,
      snapshot: onSnapshot,
      schema: onSchema,
      batch: onBatch,
      notice: note,
      fatal: (text) => {
        showError(text);
        setStatus(Status.CLOSED, '');
      },
    },
  });
  const shaped = [shape.where && `where ${shape.where}`, shape.columns && `columns ${shape.columns.join(', ')}`].filter(Boolean);
  note('info', `Connecting to ${table}${shaped.length ? ` (${shaped.join('; ')})` : ''}.`);
  live.start(startSelect.value === 'snapshot');
}

function disconnect() {
  attempts++;
  live?.stop();
  live = null;
  setStatus(Status.CLOSED, '');
  note('info', 'Disconnected.');
}

function init() {
  const params = new URLSearchParams(location.hash.slice(1));
  apiInput.value = params.get('api') ?? location.origin;
  tokenInput.value = params.get('token') ?? '';
  const table = params.get('table');
  if (table) tableSelect.replaceChildren(new Option(table, table, true, true));
  if (params.get('start') === 'live') startSelect.value = 'live';
  if (params.has('token')) history.replaceState(null, '', location.pathname + location.search);
  $('row-cap').textContent = String(MAX_ROWS);

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    connect();
  });
  disconnectButton.addEventListener('click', disconnect);
  $('load-tables').addEventListener('click', () => loadTables().then(loadColumns).catch((err) => showError(err.message)));
  tokenInput.addEventListener('change', () => loadTables().then(loadColumns).catch((err) => showError(err.message)));
  tableSelect.addEventListener('change', () => loadColumns().catch((err) => showError(err.message)));
  whereInput.addEventListener('change', shapeChanged);
  columnsBox.addEventListener('change', shapeChanged);
  chartSelect.addEventListener('change', () => {
    chart.show(chartSelect.value);
    scheduleRender();
  });
  setInterval(showRate, 1000);
  setStatus(Status.CLOSED, '');
  if (tokenInput.value) connect();
}

init();
