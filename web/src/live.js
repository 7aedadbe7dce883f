// LiveTable keeps one table live in the page: the snapshot and its cursor, then the
// stream from that cursor, through the terminal events of the protocol (DESIGN.md,
// "The stream"; seeds 000-002):
//   refresh-required  close, load a new snapshot, subscribe from its cursor;
//   reconnect         close, wait retry_ms, reopen from the last cursor;
//   failure           close and stop;
//   connection lost   the browser reconnects with Last-Event-ID by itself; when it gives
//                     up (an HTTP error on reconnect, such as 503 while a server drains)
//                     reopen from the last cursor with backoff.
// A stream refused before it ever opened (bad token, origin not allowed) is not retried.
import { fetchSnapshot, streamURL } from './api.js';
import { decodePayload } from './arrow.js';

/** The connection states the page shows. */
export const Status = Object.freeze({
  CONNECTING: 'connecting',
  LIVE: 'live',
  RECONNECTING: 'reconnecting',
  CLOSED: 'closed',
});

/** The notice when a stream opens, by why it was opened. */
const OPENED = Object.freeze({
  snapshot: 'Stream open, continuing exactly after the snapshot.',
  live: 'Stream open: rows committed from now on.',
  resume: 'Stream resumed from the last cursor.',
});

/** Consecutive failed reopenings after which a once-live stream gives up. */
const MAX_FAILURES = 8;
/** Upper bound of a reopening delay, whatever retry_ms or the backoff say. */
const MAX_DELAY_MS = 30_000;

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
  #handlers;
  /** Bumped by start and stop: callbacks of an older generation are ignored. */
  #gen = 0;
  /** @type {EventSource | null} */
  #source = null;
  #timer = 0;
  /** The cursor of the snapshot or of the last schema or batch event. */
  #cursor = '';
  /** Whether a stream opened since start: refusals after that are retried. */
  #opened = false;
  /** Consecutive failed reopenings. */
  #failures = 0;

  /**
   * @param {{base: string, token: string, table: string, handlers: Handlers}} options
   */
  constructor({ base, token, table, handlers }) {
    this.#base = base;
    this.#token = token;
    this.#table = table;
    this.#handlers = handlers;
  }

  /**
   * Starts from a snapshot (then the stream from its cursor) or, with fromSnapshot false,
   * from a new subscription that shows only rows committed after it.
   */
  start(fromSnapshot) {
    this.stop();
    const gen = this.#gen;
    this.#cursor = '';
    this.#opened = false;
    this.#failures = 0;
    if (fromSnapshot) {
      this.#refresh(gen);
    } else {
      this.#subscribe(gen, '', 'live');
    }
  }

  /** Closes the stream and cancels pending work. */
  stop() {
    this.#gen++;
    this.#close();
  }

  #close() {
    clearTimeout(this.#timer);
    this.#source?.close();
    this.#source = null;
  }

  async #refresh(gen) {
    this.#handlers.status(Status.CONNECTING, 'loading the snapshot');
    let snap;
    try {
      snap = await fetchSnapshot(this.#base, this.#token, this.#table);
    } catch (err) {
      if (gen === this.#gen) this.#fatal(err.message);
      return;
    }
    if (gen !== this.#gen) return;
    this.#cursor = snap.cursor;
    this.#handlers.snapshot(snap.table, snap.cursor);
    this.#subscribe(gen, snap.cursor, 'snapshot');
  }

  /**
   * Opens the stream after cursor ('' for a new subscription); `why` is 'snapshot',
   * 'live' or 'resume' (reopening from the last cursor).
   */
  #subscribe(gen, cursor, why) {
    this.#close();
    const source = new EventSource(streamURL(this.#base, this.#token, cursor));
    this.#source = source;
    let sourceOpened = false;
    this.#handlers.status(why === 'resume' ? Status.RECONNECTING : Status.CONNECTING, 'opening the stream');
    const on = (event, fn) =>
      source.addEventListener(event, (ev) => {
        if (gen === this.#gen && this.#source === source) fn(ev);
      });

    on('open', () => {
      this.#handlers.notice('info', sourceOpened ? 'Stream resumed by the browser with Last-Event-ID.' : OPENED[why]);
      sourceOpened = true;
      this.#opened = true;
      this.#failures = 0;
      this.#handlers.status(Status.LIVE, '');
    });
    on('schema', (ev) => {
      const table = this.#decode(ev.data, 'schema');
      if (!table) return;
      this.#cursor = ev.lastEventId;
      this.#handlers.schema(table.schema, this.#cursor);
    });
    on('batch', (ev) => {
      const table = this.#decode(ev.data, 'batch');
      if (!table) return;
      this.#cursor = ev.lastEventId;
      this.#handlers.batch(table, this.#cursor);
    });
    on('refresh-required', (ev) => {
      this.#close();
      const { reason } = parseData(ev.data);
      this.#handlers.notice('warning', `Refresh required (${reason}): the stream cannot continue from the ` +
        `last cursor. Loading a new snapshot and subscribing from its cursor.`);
      this.#refresh(gen);
    });
    on('reconnect', (ev) => {
      this.#close();
      const { reason, retry_ms: retry } = parseData(ev.data);
      const delay = Math.min(Math.max(Number(retry) || 0, 0), MAX_DELAY_MS);
      this.#handlers.status(Status.RECONNECTING, reason);
      this.#handlers.notice('info', `The server asked to reconnect (${reason}): resuming from the last ` +
        `cursor in ${(delay / 1000).toFixed(1)} s.`);
      this.#later(gen, delay);
    });
    on('failure', (ev) => {
      const { code, message } = parseData(ev.data);
      this.#fatal(`The stream failed (${code}): ${message}`);
    });
    on('error', () => {
      if (source.readyState === EventSource.CONNECTING) {
        this.#handlers.status(Status.RECONNECTING, 'connection lost; resuming with Last-Event-ID');
        return;
      }
      if (!this.#opened) {
        this.#fatal(refused(this.#base));
        return;
      }
      this.#failures++;
      if (this.#failures > MAX_FAILURES) {
        this.#fatal(`The stream could not be reopened after ${MAX_FAILURES} attempts.`);
        return;
      }
      const delay = Math.min(1000 * 2 ** (this.#failures - 1), MAX_DELAY_MS) * (0.5 + Math.random() / 2);
      this.#handlers.status(Status.RECONNECTING, 'the server did not take the stream back');
      this.#handlers.notice('warning', `The stream could not be reopened (attempt ${this.#failures}); ` +
        `retrying from the last cursor in ${(delay / 1000).toFixed(1)} s.`);
      this.#later(gen, delay);
    });
  }

  #later(gen, delay) {
    this.#close();
    this.#timer = setTimeout(() => {
      if (gen === this.#gen) this.#subscribe(gen, this.#cursor, 'resume');
    }, delay);
  }

  #decode(data, event) {
    try {
      return decodePayload(data);
    } catch (err) {
      this.#fatal(`A ${event} event could not be decoded as Arrow IPC: ${err.message}`);
      return null;
    }
  }

  #fatal(text) {
    this.stop();
    this.#handlers.fatal(text);
  }
}

function parseData(data) {
  try {
    return JSON.parse(data) ?? {};
  } catch {
    return {};
  }
}

// EventSource reports no status code, so the message names what a refusal can be.
function refused(base) {
  return `The stream from ${base} was refused before it started. The browser does not say why: ` +
    `an HTTP error (401 unknown, expired or revoked token; 403 token for another table, or this ` +
    `origin, ${location.origin}, is not on the server's --cors-origin allow-list; 429 or 503 busy), ` +
    `or the server is unreachable.`;
}
