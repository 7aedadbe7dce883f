// Drives headless Chromium for the Go tests in cmd/ducktail/browser_test.go. Commands
// arrive on stdin, one JSON object a line; each is answered on stdout by one line
//   {"id": …, "ok": true, "result": …}   or   {"id": …, "ok": false, "error": "…", "state": …}
// after a first line {"ready": true, "version": "<chromium version>"}. Commands:
//   open       {page, url}                  a new page in its own context (TLS errors ignored)
//   wait       {page, until, timeout_ms}    until the page's state matches `until`
//                                           (status, count, error, notice, columns: see inspect)
//   state      {page}                       the page's state (see inspect)
//   select     {page, selector, value}      choose an <option>
//   click      {page, selector}
//   fill       {page, selector, value}      type value into a text field, then leave it
//                                           (the field fires change)
//   check      {page, selector, checked}    tick or untick a checkbox (it fires change)
//   hover      {page, selector, x, y}       move the mouse to the point (x, y) of the
//                                           element's box, as fractions of its size
//   screenshot {page, path}                 a full-page PNG
// At the end of its input it closes the browser and exits.
// The state of a page includes every console error and uncaught exception it logged.
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const browser = await chromium.launch({
  executablePath: process.env.DUCKTAIL_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});

/** @type {Map<string, {page: import('playwright-core').Page, problems: string[]}>} */
const pages = new Map();

// inspect runs in the page: the state the Go test checks, read from the DOM, when it
// has every property `until` names (status, count, error and notice substrings, the
// header's columns), else null. It is one self-contained function because Playwright
// ships it to the page as source; the page's Content-Security-Policy forbids evaluating
// strings there.
function inspect(until) {
  const q = (s) => document.querySelector(s);
  const error = q('#error');
  const state = {
    url: location.href,
    status: q('#status')?.dataset.status ?? '',
    count: Number(q('#row-count')?.dataset.count ?? -1),
    cursor: q('#cursor')?.textContent ?? '',
    error: error && !error.hidden ? error.textContent : '',
    notices: Array.from(document.querySelectorAll('#notices li'), (li) => li.textContent),
    columns: Array.from(document.querySelectorAll('#rows thead th'), (th) => th.textContent),
    picker: Array.from(document.querySelectorAll('#columns input[type=checkbox]'), (b) => ({ name: b.value, checked: b.checked })),
    rows: Array.from(document.querySelectorAll('#rows tbody tr'), (tr) => ({
      key: Number(tr.dataset.key),
      cells: Array.from(tr.cells, (c) => c.textContent),
    })),
    chart_points: Number(q('#chart')?.dataset.points ?? 0),
    chart: chartState(),
    buttons: {
      connect: q('#connect')?.className ?? '',
      disconnect: q('#disconnect')?.className ?? '',
    },
  };
  const ok = (until.status === undefined || state.status === until.status) &&
    (until.count === undefined || state.count === until.count) &&
    (until.error === undefined || state.error.includes(until.error)) &&
    (until.notice === undefined || state.notices.some((n) => n.includes(until.notice))) &&
    (until.columns === undefined || JSON.stringify(state.columns) === JSON.stringify(until.columns));
  return ok ? state : null;

  // The chart as drawn: its x-axis, the legend's x value, its height, and the ink (pixels
  // drawn) in the band of the x-axis labels, overall and in the canvas's last 3 pixel
  // columns, where only a label cut off by the canvas's edge can be.
  function chartState() {
    const el = q('#chart');
    const canvas = el?.querySelector('canvas');
    const over = el?.querySelector('.u-over');
    const out = {
      x: el?.dataset.x ?? '',
      hidden: !el || el.getClientRects().length === 0,
      height: el ? Math.round(el.closest('section').getBoundingClientRect().height) : 0,
      legend_x: el?.querySelector('.u-legend .u-series:first-child .u-value')?.textContent ?? '',
      axis_ink: 0,
      edge_ink: 0,
    };
    if (!canvas || !over || out.hidden) return out;
    const ratio = canvas.width / canvas.getBoundingClientRect().width;
    const top = Math.ceil((over.offsetTop + over.offsetHeight) * ratio) + 1;
    const band = canvas.getContext('2d').getImageData(0, top, canvas.width, canvas.height - top);
    const edge = Math.ceil(3 * ratio);
    for (let i = 3; i < band.data.length; i += 4) {
      if (band.data[i] === 0) continue;
      out.axis_ink++;
      if ((i >> 2) % band.width >= band.width - edge) out.edge_ink++;
    }
    return out;
  }
}

async function state(name) {
  const p = pageNamed(name);
  return { ...(await p.page.evaluate(inspect, {})), problems: p.problems };
}

function pageNamed(name) {
  const p = pages.get(name);
  if (!p) throw new Error(`no page ${name}`);
  return p;
}

const commands = {
  async open({ page: name, url }) {
    // A zone west of UTC, so that a date shown in local time would be a day early.
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 1000 },
      locale: 'en-US',
      timezoneId: 'America/Los_Angeles',
    });
    const page = await context.newPage();
    const problems = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`exception: ${err.message}`));
    pages.set(name, { page, problems });
    await page.goto(url, { waitUntil: 'load' });
    return { url: page.url() };
  },
  async wait({ page: name, until, timeout_ms: timeout }) {
    const { page } = pageNamed(name);
    const found = await page.waitForFunction(inspect, until, { timeout, polling: 'raf' });
    return { ...(await found.jsonValue()), problems: pageNamed(name).problems };
  },
  state: ({ page }) => state(page),
  async select({ page, selector, value }) {
    await pageNamed(page).page.selectOption(selector, value);
    return null;
  },
  async click({ page, selector }) {
    await pageNamed(page).page.click(selector);
    return null;
  },
  async fill({ page, selector, value }) {
    const field = pageNamed(page).page.locator(selector);
    await field.fill(value);
    await field.blur();
    return null;
  },
  async check({ page, selector, checked }) {
    await pageNamed(page).page.locator(selector).setChecked(checked);
    return null;
  },
  async hover({ page, selector, x, y }) {
    const p = pageNamed(page).page;
    const box = await p.locator(selector).boundingBox();
    if (!box) throw new Error(`${selector} is not shown`);
    await p.hover(selector, { position: { x: x * box.width, y: y * box.height } });
    return state(page);
  },
  async screenshot({ page, path }) {
    await pageNamed(page).page.screenshot({ path, fullPage: true });
    return { path };
  },
};

const reply = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
reply({ ready: true, version: browser.version() });

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, cmd, ...args } = JSON.parse(line);
  try {
    const fn = commands[cmd];
    if (!fn) throw new Error(`unknown command ${cmd}`);
    reply({ id, ok: true, result: await fn(args) });
  } catch (err) {
    let snapshot = null;
    if (args.page && pages.has(args.page)) snapshot = await state(args.page).catch(() => null);
    reply({ id, ok: false, error: err.message, state: snapshot });
  }
}
await browser.close();
