// The HTTP side of the client: URLs, headers with a token asked for on every request,
// and refusals read as RFC 9457 problem+json (docs/api.md).
import { parseRetryAfter, retryableStatus } from './backoff.js';
import type { BackoffOptions } from './backoff.js';
import { HttpError } from './errors.js';
import type { Problem } from './errors.js';
import { setShapeParams } from './shape.js';
import type { Shape } from './shape.js';
import type { Encoding } from './stream.js';

/** Options of new DucktailClient. */
export interface ClientOptions {
  /** The server's root URL: "https://localhost:8443". */
  baseUrl: string;
  /** A token (purpose stream for streams and snapshots, query for queries, or admin). */
  token?: string;
  /** Called before every request and connection attempt, so a renewed token is picked up. */
  getToken?: () => string | Promise<string>;
  /** The fetch to use; globalThis.fetch by default. */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * Streams through GET /stream/{token}?cursor=… instead of GET /v1/tables/{t}/stream
   * with Authorization and Last-Event-ID: a request without custom headers, which a
   * browser sends to another origin without a CORS preflight. Stream tokens only; a
   * token scoped to a table streams that table.
   */
  tokenInPath?: boolean;
  /** The server's --heartbeat-interval; default 15,000 ms. */
  heartbeatIntervalMs?: number;
  /** Silence tolerated past the heartbeat interval before a connection is dead; default 10,000 ms. */
  heartbeatSlackMs?: number;
  /** The reconnect schedule (backoff.ts). */
  backoff?: BackoffOptions;
}

/** Transport is what streams, snapshots and queries share: resolved options and helpers. */
export class Transport {
  readonly baseUrl: string;
  readonly fetch: typeof fetch;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatSlackMs: number;
  readonly backoff: BackoffOptions;
  readonly tokenInPath: boolean;
  #getToken: () => string | Promise<string>;
  #headers: Record<string, string>;

  constructor(opts: ClientOptions) {
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw new TypeError(`baseUrl ${JSON.stringify(opts.baseUrl)}: want an http:// or https:// URL`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`baseUrl ${JSON.stringify(opts.baseUrl)}: want an http:// or https:// URL`);
    }
    if (opts.getToken === undefined && opts.token === undefined) throw new TypeError('token or getToken is required');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    const f = opts.fetch ?? globalThis.fetch;
    this.fetch = (input, init) => f(input, init);
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 15_000;
    this.heartbeatSlackMs = opts.heartbeatSlackMs ?? 10_000;
    this.backoff = opts.backoff ?? {};
    this.tokenInPath = opts.tokenInPath ?? false;
    const token = opts.token;
    this.#getToken = opts.getToken ?? (() => token!);
    this.#headers = { ...opts.headers };
  }

  /** The URL of a table path: /v1/tables/{table}/{what}, with the shape's parameters. */
  tableURL(table: string, what: string, shape?: Shape): string {
    const url = `${this.baseUrl}/v1/tables/${encodeURIComponent(table)}/${what}`;
    const q = new URLSearchParams();
    setShapeParams(q, shape);
    const query = q.toString();
    return query ? `${url}?${query}` : url;
  }

  /** Headers with Authorization: Bearer and accept. */
  async headers(accept: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
    return { ...this.#headers, Accept: accept, ...extra, Authorization: `Bearer ${await this.#getToken()}` };
  }

  /** The URL of a stream connection from cursor, through shape. */
  async streamURL(table: string, cursor: string, encoding: Encoding, shape?: Shape): Promise<string> {
    const q = new URLSearchParams();
    if (encoding !== 'arrow') q.set('encoding', encoding);
    setShapeParams(q, shape);
    let url: string;
    if (this.tokenInPath) {
      url = `${this.baseUrl}/stream/${encodeURIComponent(await this.#getToken())}`;
      q.set('table', table);
      if (cursor) q.set('cursor', cursor);
    } else {
      url = this.tableURL(table, 'stream');
    }
    const query = q.toString();
    return query ? `${url}?${query}` : url;
  }

  /** The headers of a stream connection: Last-Event-ID carries the cursor. */
  async streamHeaders(cursor: string): Promise<Record<string, string>> {
    if (this.tokenInPath) return { ...this.#headers, Accept: 'text/event-stream' };
    return this.headers('text/event-stream', cursor ? { 'Last-Event-ID': cursor } : {});
  }

  /** Reads a refusal: its problem+json body when there is one, and its Retry-After. */
  async httpError(res: Response, what: string): Promise<HttpError> {
    let problem: Problem | null = null;
    try {
      const text = await res.text();
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object') problem = parsed as Problem;
    } catch {
      // Not problem+json: the status says it all.
    }
    return new HttpError(res.status, problem, parseRetryAfter(res.headers.get('Retry-After')), retryableStatus(res.status), what);
  }
}
