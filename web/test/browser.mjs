// Drives headless Chromium for the Go tests in cmd/ducktail/browser_test.go. Commands
// arrive on stdin, one JSON object a line; each is answered on stdout by one line
//   {"id": …, "ok": true, "result": …}   or   {"id": …, "ok": false, "error": "…", "state": …}
// after a first line {"ready": true, "version": "<chromium version>"}. Commands:
//   open       {page, url}                  a new page in its own context (TLS errors ignored)
//   wait       {page, until, timeout_ms}    until the page's state matches `until`
//                                           (status, count, error, notice: see inspect)
//   state      {page}                       the page's state (see inspect)
//   select     {page, selector, value}      choose an <option>
//   click      {page, selector}
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
// has every property `until` names (status, count, error and notice substrings), else
// null. It is one self-contained function because Playwright ships it to the page as
// source; the page's Content-Security-Policy forbids evaluating strings there.
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
    rows: Array.from(document.querySelectorAll('#rows tbody tr'), (tr) => ({
      key: Number(tr.dataset.key),
      cells: Array.from(tr.cells, (c) => c.textContent),
    })),
    chart_points: Number(q('#chart')?.dataset.points ?? 0),
  };
  const ok = (until.status === undefined || state.status === until.status) &&
    (until.count === undefined || state.count === until.count) &&
    (until.error === undefined || state.error.includes(until.error)) &&
    (until.notice === undefined || state.notices.some((n) => n.includes(until.notice)));
  return ok ? state : null;
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
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 1000 } });
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
