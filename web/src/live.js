// LiveTable keeps one table live in the page with @ducktail/client (clients/js): a
// liveQuery (the snapshot and its cursor, then the stream from that cursor, rebuilt from
// a new snapshot after refresh-required), or a stream from now. The package follows the
// whole protocol (docs/consuming.md), and both are read through the page's shape (its
// filter and columns; docs/api.md, "Shapes"); this file turns what it reports into the page's
// status, notices and errors. A stream or snapshot refused before it ever worked (bad
// token, origin not allowed) is not retried.
import { ConnectionLostError, DucktailClient, HttpError, ReconnectError } from '@ducktail/client';
import { unreachable } from './api.js';

/** The connection states the page shows. */
export const Status = Object.freeze({
  CONNECTING: 'connecting',
  LIVE: 'live',
  RECONNECTING: 'reconnecting',
  REFRESHING: 'refresh-required',
  CLOSED: 'closed',
});

/**
 * @typedef {object} Handlers
 * @property {(status: string, detail: string) => void} status
 * @property {(table: import('apache-arrow').Table, cursor: string) => void} snapshot
 * @property {(schema: import('apache-arrow').Schema, cursor: string) => void} schema
 * @property {(table: import('apache-arrow').Table, cursor: string) => void} batch
 * @property {(level: 'info' | 'warning' | 'error', text: string) => void} notice
 * @property {(text: string) => void} fatal the stream stopped for good
 */

export class LiveTable {
  #base;
  #token;
  #table;
  /** @type {import('@ducktail/client').Shape | undefined} */
  #shape;
  #handlers;
  /** @type {{close(): void} | null} */
  #live = null;
  /** Whether the stream was live since start: failures after that are retried. */
  #opened = false;
  /** Whether the stream is reconnecting after it was live. */
  #resuming = false;

  /**
   * @param {{base: string, token: string, table: string, shape?: import('@ducktail/client').Shape, handlers: Handlers}} options
   */
  constructor({ base, token, table, shape, handlers }) {
    this.#base = base;
    this.#token = token;
    this.#table = table;
    this.#shape = shape;
    this.#handlers = handlers;
  }

  /**
   * Starts from a snapshot (then the stream from its cursor) or, with fromSnapshot false,
   * from a new subscription that shows only rows committed after it.
   */
  start(fromSnapshot) {
    this.stop();
    this.#opened = false;
    this.#resuming = false;
    // The token goes in the path (/stream/{token}), so that a stream from another origin
    // is a request without custom headers, which needs no CORS preflight.
    const client = new DucktailClient({ baseUrl: this.#base, token: this.#token, tokenInPath: true });
    if (fromSnapshot) this.#follow(client);
    else this.#subscribe(client);
  }

  /** Closes the stream and cancels pending work. */
  stop() {
    const live = this.#live;
    this.#live = null;
    live?.close();
  }

  #follow(client) {
    const h = this.#handlers;
    h.status(Status.CONNECTING, 'loading the snapshot');
    let snapshots = 0;
    const lq = client.liveQuery(this.#table, {
      shape: this.#shape,
      onChange: (change) => {
        if (this.#live !== lq) return;
        if (change.kind === 'batch') {
          h.batch(change.batch, change.cursor);
          return;
        }
        h.snapshot(change.rows, change.cursor);
        if (snapshots++ === 0) h.notice('info', 'Stream opening, continuing exactly after the snapshot.');
        else if (change.reason === 'schema') h.notice('info', 'The table schema changed: loaded a new snapshot.');
      },
      onStatus: (status, detail) => {
        if (this.#live === lq) this.#status(status, detail);
      },
      onError: (err) => {
        if (this.#live !== lq || this.#opened) return;
        if (lq.rows === null) this.#fatal(snapshotFailed(this.#base, this.#table, err));
        else this.#fatal(refused(this.#base, err));
      },
    });
    this.#live = lq;
  }

  #subscribe(client) {
    const h = this.#handlers;
    const stream = client.stream(this.#table, { shape: this.#shape });
    this.#live = stream;
    let notified = false;
    stream.subscribe({
      next: (ev) => {
        if (this.#live !== stream) return;
        if (ev.type === 'schema') h.schema(ev.schema, ev.cursor);
        else h.batch(ev.rows, ev.cursor);
      },
      status: (status, detail) => {
        if (this.#live !== stream) return;
        if (status === 'live' && !notified) {
          notified = true;
          h.notice('info', 'Stream open: rows committed from now on.');
        }
        this.#status(status, detail);
      },
      error: (err) => {
        if (this.#live === stream && !this.#opened) this.#fatal(refused(this.#base, err));
      },
    });
  }

  /** Shows a status of the package's stream or liveQuery, with a notice for each ending. */
  #status(status, detail) {
    const h = this.#handlers;
    const err = detail.error;
    switch (status) {
      case 'live':
        if (this.#resuming) h.notice('info', 'Stream resumed from the last cursor.');
        this.#opened = true;
        this.#resuming = false;
        h.status(Status.LIVE, '');
        return;
      case 'reconnecting': {
        if (!this.#opened) return;
        this.#resuming = true;
        const delay = `${((detail.delayMs ?? 0) / 1000).toFixed(1)} s`;
        if (err instanceof ReconnectError) {
          h.notice('info', `The server asked to reconnect (${err.reason}): resuming from the last cursor in ${delay}.`);
          h.status(Status.RECONNECTING, err.reason);
        } else if (err instanceof HttpError) {
          h.notice('warning', `The stream could not be reopened (HTTP ${err.status}); retrying from the last cursor in ${delay}.`);
          h.status(Status.RECONNECTING, 'the server did not take the stream back');
        } else {
          const why = err instanceof ConnectionLostError && err.silence ? 'the server went silent' : 'connection lost';
          h.notice('warning', `The stream was interrupted (${why}); resuming from the last cursor in ${delay}.`);
          h.status(Status.RECONNECTING, why);
        }
        return;
      }
      case 'refresh-required':
        h.notice('warning', `Refresh required (${detail.reason}): the stream cannot continue from the ` +
          'last cursor. Loading a new snapshot and subscribing from its cursor.');
        h.status(Status.REFRESHING, detail.reason ?? '');
        return;
      case 'failed':
        this.#fatal(err ? `The stream failed: ${err.message}` : 'The stream failed.');
        return;
      case 'connecting':
        h.status(Status.CONNECTING, 'opening the stream');
        return;
    }
  }

  #fatal(text) {
    this.stop();
    this.#handlers.fatal(text);
  }
}

function snapshotFailed(base, table, err) {
  const what = `The snapshot of ${table} failed`;
  return err instanceof HttpError ? `${what}: ${httpText(err)}` : unreachable(base, what);
}

/** The message for a stream that never opened. */
function refused(base, err) {
  if (err instanceof HttpError) return `The stream from ${base} was refused before it started: ${httpText(err)}`;
  // fetch reports a refusal without CORS headers as a network error, with no status.
  return `The stream from ${base} was refused before it started. The browser does not say why: ` +
    `an HTTP error (401 unknown, expired or revoked token; 403 token for another table, or this ` +
    `origin, ${location.origin}, is not on the server's --cors-origin allow-list; 429 or 503 busy), ` +
    `or the server is unreachable.`;
}

function httpText(err) {
  const detail = err.problem?.detail || err.problem?.title || '';
  return `HTTP ${err.status}${detail ? ` – ${detail}` : ''}`;
}
