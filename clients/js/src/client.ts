// DucktailClient: the entry point of the package (docs/api.md for the endpoints it calls).
import { tableFromIPC } from 'apache-arrow';
import type { Table } from 'apache-arrow';
import { Schedule } from './backoff.js';
import type { Shape } from './shape.js';
import { LiveQuery } from './livequery.js';
import type { LiveQueryOptions } from './livequery.js';
import { DucktailStream } from './stream.js';
import type { Encoding, StreamOptions } from './stream.js';
import { Transport } from './transport.js';
import type { ClientOptions } from './transport.js';

const ARROW_STREAM = 'application/vnd.apache.arrow.stream';

/** A snapshot: the table's rows and the cursor they were read at. */
export interface Snapshot {
  rows: Table;
  /** The Ducktail-Cursor header: streaming from it continues exactly after these rows. */
  cursor: string;
}

/** A query result and, per table it read, the cursor of the transaction it ran in. */
export interface QueryResult {
  rows: Table;
  /** The Ducktail-Cursors header: table name to cursor. */
  cursors: Record<string, string>;
}

/**
 * DucktailClient talks to one ducktail server. It holds no connection itself: each
 * stream, liveQuery, snapshot and query makes its own requests, asking getToken (when
 * given) for the token before each one.
 */
export class DucktailClient {
  #t: Transport;

  /** Throws a TypeError when baseUrl is not an http(s) URL or no token is given. */
  constructor(opts: ClientOptions) {
    this.#t = new Transport(opts);
  }

  /** Follows a table's commits from opts.cursor (or from now); see DucktailStream. */
  stream<E extends Encoding = 'arrow'>(table: string, opts: StreamOptions<E> = {}): DucktailStream<E> {
    return new DucktailStream<E>(this.#t, table, opts);
  }

  /** Keeps a table's rows: snapshot, then the stream from its cursor; see LiveQuery. */
  liveQuery(table: string, opts: LiveQueryOptions = {}): LiveQuery {
    return new LiveQuery(
      {
        snapshot: (t, o) => this.snapshot(t, o),
        stream: (t, o) => this.stream(t, { cursor: o.cursor, shape: o.shape }),
        schedule: () => new Schedule(this.#t.backoff),
      },
      table,
      opts,
    );
  }

  /**
   * GET /v1/tables/{table}/snapshot as an Arrow IPC stream (format arrow, the only one):
   * the whole table, or the rows and columns of opts.shape, from one read transaction,
   * and its cursor (bound to the shape). Rejects with an HttpError
   * on a refusal, or an Error when the answer has no cursor header (from another origin:
   * the server must list it in --cors-origin).
   */
  async snapshot(table: string, opts: { format?: 'arrow'; shape?: Shape; signal?: AbortSignal } = {}): Promise<Snapshot> {
    if (opts.format !== undefined && opts.format !== 'arrow') throw new TypeError(`snapshot format ${opts.format}: only arrow`);
    const what = `the snapshot of ${table}`;
    const res = await this.#t.fetch(this.#t.tableURL(table, 'snapshot', opts.shape), {
      headers: await this.#t.headers(ARROW_STREAM),
      signal: opts.signal ?? null,
      cache: 'no-store',
    });
    if (!res.ok) throw await this.#t.httpError(res, what);
    const cursor = res.headers.get('Ducktail-Cursor');
    if (!cursor) throw new Error(`${what}: the answer has no readable Ducktail-Cursor header`);
    return { rows: tableFromIPC(new Uint8Array(await res.arrayBuffer())), cursor };
  }

  /**
   * POST /v1/query: one SELECT with positional parameters ($1 or ?), its result as an
   * Arrow Table and the cursor of every table it read. Rejects with an HttpError when
   * the server refuses it (the problem names what the sandbox refused).
   */
  async query(sql: string, params: unknown[] = [], opts: { signal?: AbortSignal } = {}): Promise<QueryResult> {
    const body = JSON.stringify({ sql, params }, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    const res = await this.#t.fetch(`${this.#t.baseUrl}/v1/query`, {
      method: 'POST',
      headers: await this.#t.headers(ARROW_STREAM, { 'Content-Type': 'application/json' }),
      body,
      signal: opts.signal ?? null,
      cache: 'no-store',
    });
    if (!res.ok) throw await this.#t.httpError(res, 'the query');
    return { rows: tableFromIPC(new Uint8Array(await res.arrayBuffer())), cursors: parseCursors(res.headers.get('Ducktail-Cursors')) };
  }
}

/** Reads Ducktail-Cursors: "t1=r1.…, t2=r1.…" (cursors hold no comma or space). */
export function parseCursors(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(',')) {
    const p = part.trim();
    const eq = p.indexOf('=');
    if (eq > 0) out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}
