// One table's live stream over fetch, with every rule of docs/consuming.md: resume with
// Last-Event-ID, the reconnect schedule (backoff.ts), the heartbeat watchdog, and the
// three endings (a terminal event, a refusal before the stream, an abrupt close).
import type { Schema, Table } from 'apache-arrow';
import { Schedule, sleep } from './backoff.js';
import type { Ending } from './backoff.js';
import { ConnectionLostError, FailureError, HandlerError, HttpError, ReconnectError, RefreshRequiredError } from './errors.js';
import { decodeArrow, decodeJsonRows, decodeJsonSchema, decodeTerminal } from './payload.js';
import type { JsonColumn } from './payload.js';
import { SSEParser } from './sse.js';
import type { SSEEvent } from './sse.js';
import type { Shape } from './shape.js';
import type { Transport } from './transport.js';
import type { ExactRow } from './values.js';

/**
 * Where a stream is: `connecting` until the first schema event of the first connection,
 * `live` from a schema event on, `reconnecting` while it waits to connect again;
 * `refresh-required`, `failed` and `closed` are final.
 */
export type Status = 'connecting' | 'live' | 'reconnecting' | 'refresh-required' | 'failed' | 'closed';

/** Why a status was entered: the error that caused it and the wait before the next attempt. */
export interface StatusDetail {
  /** The terminal event's reason or code, or the HTTP status, when there was one. */
  reason?: string;
  /** How long the stream waits before it connects again (status reconnecting). */
  delayMs?: number;
  /** The error that ended the connection. */
  error?: Error;
}

/** The payload encoding asked for with ?encoding=. */
export type Encoding = 'arrow' | 'json';

/**
 * A schema or batch event. With encoding arrow, `schema` is the Arrow schema and `rows`
 * an Arrow Table (`toObjects` reads it exactly); with json, `schema` lists the columns
 * and `rows` holds objects. `cursor` is the event's id: resuming from it continues
 * exactly after this event. `committedAt` is set when the server sends a commit time.
 */
export interface StreamEvent<E extends Encoding = 'arrow'> {
  type: 'schema' | 'batch';
  cursor: string;
  schema: E extends 'arrow' ? Schema : JsonColumn[];
  rows: E extends 'arrow' ? Table : ExactRow[];
  committedAt?: string;
}

/** Handlers of stream.subscribe; each is optional. */
export interface Subscriber<E extends Encoding = 'arrow'> {
  /** Each schema and batch event, in order. */
  next?(event: StreamEvent<E>): void;
  /** Each change of status (and the current one, at once, on subscribing). */
  status?(status: Status, detail: StatusDetail): void;
  /** Every error: each connection's ending, and what a handler threw (HandlerError). */
  error?(error: Error): void;
}

/** Options of client.stream. */
export interface StreamOptions<E extends Encoding = 'arrow'> {
  /** Where to start: a cursor from an event or a snapshot; none starts now (no backfill). */
  cursor?: string;
  /** The payload encoding; default arrow. */
  encoding?: E;
  /** The rows and columns to follow (shape.ts); cursor must have been read through the same shape. */
  shape?: Shape;
  /** Aborting it closes the stream. */
  signal?: AbortSignal;
}

const FINAL: ReadonlySet<Status> = new Set(['refresh-required', 'failed', 'closed']);

/** Iterator state: events not yet taken, and the consumer waiting in next(). */
interface Pull<E extends Encoding> {
  queue: StreamEvent<E>[];
  wake: ((r: IteratorResult<StreamEvent<E>>) => void) | null;
  fail: ((e: unknown) => void) | null;
  idle: (() => void) | null;
}

/**
 * DucktailStream follows one table from a cursor until it is closed or cannot go on.
 * It connects at once. An event counts as processed, and its cursor becomes the one a
 * reconnection resumes from, once every `next` handler returned and every async
 * iterator came back for the next event. A handler that throws is reported to every
 * `error` handler as a HandlerError; the other handlers still get the event.
 *
 * The endings: after an abrupt close, silence (nothing for heartbeatIntervalMs +
 * heartbeatSlackMs), a reconnect event, or a 408/429/5xx refusal it reconnects on the
 * schedule of backoff.ts; after refresh-required (status refresh-required), failure, an
 * undecodable payload or another refusal (status failed) it stops, and an async iterator
 * throws the error. Each ending is reported to the `error` handlers.
 */
export class DucktailStream<E extends Encoding = 'arrow'> implements AsyncIterable<StreamEvent<E>> {
  readonly table: string;
  readonly encoding: E;
  /** The shape it follows, or undefined for every row and column. */
  readonly shape: Shape | undefined;
  #transport: Transport;
  #schedule: Schedule;
  #status: Status = 'connecting';
  #cursor: string;
  #error: Error | null = null;
  #subscribers = new Set<Subscriber<E>>();
  #pulls = new Set<Pull<E>>();
  #stop = new AbortController();
  #stopped = aborted(this.#stop.signal);
  #columns: JsonColumn[] = [];

  /** Use client.stream. */
  constructor(transport: Transport, table: string, opts: StreamOptions<E> = {}) {
    this.table = table;
    this.encoding = (opts.encoding ?? 'arrow') as E;
    this.shape = opts.shape;
    this.#transport = transport;
    this.#schedule = new Schedule(transport.backoff);
    this.#cursor = opts.cursor ?? '';
    if (opts.signal) {
      if (opts.signal.aborted) queueMicrotask(() => this.close());
      else opts.signal.addEventListener('abort', () => this.close(), { once: true });
    }
    queueMicrotask(() => void this.#run());
  }

  /** The current status. */
  get status(): Status {
    return this.#status;
  }

  /** The cursor of the last processed event: where a new stream would continue. */
  get cursor(): string {
    return this.#cursor;
  }

  /** The error that stopped the stream (status refresh-required or failed), else null. */
  get error(): Error | null {
    return this.#error;
  }

  /**
   * Adds handlers and returns the function that removes them. `status` is called at once
   * with the current status.
   */
  subscribe(subscriber: Subscriber<E>): () => void {
    const s = { ...subscriber };
    this.#subscribers.add(s);
    this.#call('status', () => s.status?.(this.#status, {}));
    return () => {
      this.#subscribers.delete(s);
    };
  }

  /**
   * Resolves when the stream is live (its schema event arrived); rejects with the error
   * when it stops first, or after timeoutMs.
   */
  connected(timeoutMs = 30_000): Promise<void> {
    if (this.#status === 'live') return Promise.resolve();
    if (FINAL.has(this.#status)) return Promise.reject(this.#error ?? new Error(`stream ${this.#status}`));
    return new Promise((resolve, reject) => {
      let unsubscribe = () => {};
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new Error(`stream of ${this.table} not live within ${timeoutMs} ms (status ${this.#status})`));
      }, timeoutMs);
      unsubscribe = this.subscribe({
        status: (status) => {
          if (status !== 'live' && !FINAL.has(status)) return;
          clearTimeout(timer);
          queueMicrotask(unsubscribe);
          if (status === 'live') resolve();
          else reject(this.#error ?? new Error(`stream ${status}`));
        },
      });
    });
  }

  /** Closes the stream for good (status closed); iterators end. */
  close(): void {
    if (FINAL.has(this.#status)) return;
    this.#stop.abort();
    this.#finish('closed', null);
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent<E>> {
    const pull: Pull<E> = { queue: [], wake: null, fail: null, idle: null };
    this.#pulls.add(pull);
    const done = (): IteratorResult<StreamEvent<E>> => ({ value: undefined, done: true });
    return {
      next: () => {
        const ev = pull.queue.shift();
        if (ev) return Promise.resolve({ value: ev, done: false });
        if (FINAL.has(this.#status)) {
          this.#pulls.delete(pull);
          return this.#status === 'closed' || !this.#error ? Promise.resolve(done()) : Promise.reject(this.#error);
        }
        return new Promise((resolve, reject) => {
          pull.wake = resolve;
          pull.fail = reject;
          pull.idle?.();
          pull.idle = null;
        });
      },
      return: () => {
        this.#pulls.delete(pull);
        pull.idle?.();
        return Promise.resolve(done());
      },
    };
  }

  async #run(): Promise<void> {
    while (!FINAL.has(this.#status)) {
      const ending = await this.#connect();
      if (FINAL.has(this.#status)) return;
      const decision = this.#schedule.decide(ending.ending);
      this.#report(ending.error);
      // An error handler may have closed the stream.
      if (FINAL.has(this.#status)) return;
      if (!decision.retry) {
        this.#finish(decision.status, ending.error);
        return;
      }
      this.#setStatus('reconnecting', { reason: ending.reason, delayMs: decision.delayMs, error: ending.error });
      await sleep(decision.delayMs, this.#stop.signal);
    }
  }

  /** One connection, read until it ends; returns how it ended. */
  async #connect(): Promise<{ ending: Ending; error: Error; reason?: string }> {
    const t = this.#transport;
    const conn = new AbortController();
    const onStop = () => conn.abort();
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    const silenceMs = t.heartbeatIntervalMs + t.heartbeatSlackMs;
    let silent = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      timer = setTimeout(() => {
        silent = true;
        conn.abort();
      }, silenceMs);
    };
    const disarm = () => clearTimeout(timer);
    const started = Date.now();
    let delivered = false;
    const held = () => ({ heldMs: Date.now() - started, delivered });
    const lost = (cause: unknown): { ending: Ending; error: Error } => ({
      ending: { kind: 'abrupt', ...held() },
      error: silent
        ? new ConnectionLostError(`nothing from the server for ${silenceMs} ms: the connection is taken for dead`, true)
        : new ConnectionLostError(`the stream of ${this.table} was cut: ${cause instanceof Error ? cause.message : String(cause)}`, false, cause),
    });
    try {
      arm();
      let res: Response;
      try {
        res = await t.fetch(await t.streamURL(this.table, this.#cursor, this.encoding, this.shape), {
          headers: await t.streamHeaders(this.#cursor),
          signal: conn.signal,
          cache: 'no-store',
        });
      } finally {
        disarm();
      }
      if (res.status !== 200) {
        arm();
        try {
          const err = await t.httpError(res, `the stream of ${this.table}`);
          return { ending: { kind: 'http', status: err.status, retryAfterMs: err.retryAfterMs, ...held() }, error: err, reason: String(err.status) };
        } finally {
          disarm();
        }
      }
      if (!res.body) return lost(new Error('the response has no body'));
      const reader = res.body.getReader();
      const text = new TextDecoder();
      const events: SSEEvent[] = [];
      const parser = new SSEParser(
        (ev) => events.push(ev),
        (ms) => this.#schedule.setRetry(ms),
      );
      for (;;) {
        arm();
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } finally {
          disarm();
        }
        if (chunk.done) {
          parser.push(text.decode());
          parser.end();
        } else {
          parser.push(text.decode(chunk.value, { stream: true }));
        }
        while (events.length > 0) {
          const ev = events.shift()!;
          const end = await this.#handle(ev);
          if (end) {
            void reader.cancel().catch(() => {});
            return end(held());
          }
          if (ev.type === 'batch') delivered = true;
          if (FINAL.has(this.#status)) return lost(new Error('closed'));
        }
        if (chunk.done) return lost(new Error('the response ended without a terminal event'));
      }
    } catch (err) {
      return lost(err);
    } finally {
      disarm();
      this.#stop.signal.removeEventListener('abort', onStop);
      conn.abort();
    }
  }

  /**
   * Processes one event; returns, for a terminal event or an undecodable payload, the
   * ending of the connection given how long it held.
   */
  async #handle(ev: SSEEvent): Promise<((h: { heldMs: number; delivered: boolean }) => { ending: Ending; error: Error; reason?: string }) | null> {
    switch (ev.type) {
      case 'schema':
      case 'batch': {
        let event: StreamEvent<E>;
        try {
          event = this.#decode(ev);
        } catch (err) {
          const e = new FailureError('undecodable', `the ${ev.type} event ${ev.id} does not decode: ${err instanceof Error ? err.message : String(err)}`);
          return () => ({ ending: { kind: 'undecodable' }, error: e, reason: 'undecodable' });
        }
        if (ev.type === 'schema') this.#setStatus('live', {});
        await this.#deliver(event);
        if (ev.id) this.#cursor = ev.id;
        if (ev.type === 'batch') this.#schedule.reset();
        return null;
      }
      case 'refresh-required': {
        const d = decodeTerminal(ev.data);
        const e = new RefreshRequiredError(d.reason, this.#cursor);
        return () => ({ ending: { kind: 'refresh-required' }, error: e, reason: d.reason });
      }
      case 'reconnect': {
        const d = decodeTerminal(ev.data);
        const e = new ReconnectError(d.reason, d.retryMs);
        return (h) => ({ ending: { kind: 'reconnect', retryMs: d.retryMs, ...h }, error: e, reason: d.reason });
      }
      case 'failure': {
        const d = decodeTerminal(ev.data);
        const e = new FailureError(d.code, d.message);
        return () => ({ ending: { kind: 'failure' }, error: e, reason: d.code });
      }
    }
    return null;
  }

  #decode(ev: SSEEvent): StreamEvent<E> {
    if (ev.type === 'batch' && !ev.id) throw new Error('a batch event without an id');
    if (this.encoding === 'json') {
      if (ev.type === 'schema') {
        this.#columns = decodeJsonSchema(ev.data);
        return { type: 'schema', cursor: ev.id, schema: this.#columns, rows: [] } as unknown as StreamEvent<E>;
      }
      const rows = decodeJsonRows(ev.data, this.#columns);
      return { type: 'batch', cursor: ev.id, schema: this.#columns, rows } as unknown as StreamEvent<E>;
    }
    const table = decodeArrow(ev.data);
    return { type: ev.type, cursor: ev.id, schema: table.schema, rows: table } as unknown as StreamEvent<E>;
  }

  /** Hands event to every handler and iterator; resolves once each has processed it. */
  async #deliver(event: StreamEvent<E>): Promise<void> {
    for (const s of [...this.#subscribers]) this.#call('next', () => s.next?.(event));
    const waits: Promise<void>[] = [];
    for (const pull of this.#pulls) {
      if (pull.wake) {
        const wake = pull.wake;
        pull.wake = pull.fail = null;
        wake({ value: event, done: false });
      } else {
        pull.queue.push(event);
      }
      waits.push(new Promise((resolve) => (pull.idle = resolve)));
    }
    if (waits.length > 0) await Promise.race([Promise.all(waits), this.#stopped]);
  }

  /** Runs one handler; what it throws goes to every error handler. */
  #call(handler: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#report(new HandlerError(handler, err));
    }
  }

  #report(error: Error): void {
    for (const s of [...this.#subscribers]) {
      try {
        s.error?.(error);
      } catch {
        // An error handler that throws has nobody left to tell.
      }
    }
  }

  #setStatus(status: Status, detail: StatusDetail): void {
    if (FINAL.has(this.#status) || (status === this.#status && status !== 'reconnecting')) return;
    this.#status = status;
    for (const s of [...this.#subscribers]) this.#call('status', () => s.status?.(status, detail));
  }

  #finish(status: 'refresh-required' | 'failed' | 'closed', error: Error | null): void {
    if (FINAL.has(this.#status)) return;
    this.#error = error;
    this.#setStatus(status, error ? { error, reason: reasonOf(error) } : {});
    for (const pull of this.#pulls) {
      if (pull.wake) {
        const { wake, fail } = pull;
        pull.wake = pull.fail = null;
        if (status === 'closed' || !error) wake({ value: undefined, done: true });
        else fail!(error);
        this.#pulls.delete(pull);
      }
      pull.idle?.();
    }
    this.#stop.abort();
  }
}

function reasonOf(error: Error): string | undefined {
  if (error instanceof RefreshRequiredError || error instanceof ReconnectError) return error.reason;
  if (error instanceof FailureError) return error.code;
  if (error instanceof HttpError) return String(error.status);
  return undefined;
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
