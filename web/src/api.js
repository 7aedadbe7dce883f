// The page's own HTTP call to ducktail, the tables a token may see, and the messages
// for calls the browser could not make; snapshots and streams go through
// @ducktail/client (live.js).

/** A call that failed; message is meant for the user. */
export class ApiError extends Error {}

/** @param {string} base an API base URL, with or without a trailing slash */
export function normalizeBase(base) {
  return base.trim().replace(/\/+$/, '');
}

/** The message for a call the browser could not make or read at all. */
export function unreachable(base, what) {
  return `${what}: could not reach ${base} from ${location.origin}. The server is down, ` +
    `its TLS certificate is not trusted by this browser, or this origin is not on its ` +
    `--cors-origin allow-list.`;
}

async function call(base, path, token, accept, what) {
  let res;
  try {
    res = await fetch(base + path, {
      headers: { Authorization: `Bearer ${token}`, Accept: accept },
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(unreachable(base, what));
  }
  if (!res.ok) {
    throw new ApiError(`${what}: ${await describeFailure(res)}`);
  }
  return res;
}

async function describeFailure(res) {
  let detail = '';
  try {
    const problem = await res.json();
    detail = problem.detail || problem.title || '';
  } catch {
    // Not problem+json: the status says it all.
  }
  return `HTTP ${res.status}${detail ? ` – ${detail}` : ''}`;
}

/**
 * The names of the tables the token may see (GET /v1/tables).
 * @returns {Promise<string[]>}
 */
export async function listTables(base, token) {
  const res = await call(base, '/v1/tables', token, 'application/json', 'Listing the tables failed');
  const body = await res.json();
  return body.tables.map((t) => t.name);
}

/**
 * The names of a table's columns, in order (GET /v1/tables/{t}).
 * @returns {Promise<string[]>}
 */
export async function tableColumns(base, token, table) {
  const res = await call(base, `/v1/tables/${encodeURIComponent(table)}`, token, 'application/json', `Reading the columns of ${table} failed`);
  const body = await res.json();
  return body.columns.map((c) => c.name);
}
