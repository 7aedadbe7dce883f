// A table kept whole in memory: its snapshot and that snapshot's cursor, then the stream
// from the cursor (docs/consuming.md, "The hand-off: snapshot, then stream"), rebuilt
// from a new snapshot after refresh-required.
import type { Schema, Table } from 'apache-arrow';
import { Schedule, sleep } from './backoff.js';
import { HandlerError, HttpError, RefreshRequiredError } from './errors.js';
import type { Shape } from './shape.js';
import type { DucktailStream, Status, StatusDetail, StreamEvent } from './stream.js';

/** What a liveQuery shows: its rows, their cursor and its status, replaced together. */
export interface LiveState {
  /** The table's rows: the snapshot, then every batch after it; null before the first snapshot. */
  rows: Table | null;
  /** The cursor of the last snapshot or batch in rows. */
  cursor: string;
  status: Status;
}

/** A change of a liveQuery's rows. */
export interface LiveChange extends LiveState {
  rows: Table;
  /** snapshot: rows were replaced by a new snapshot; batch: batch's rows were appended. */
  kind: 'snapshot' | 'batch';
  /** The appended rows, for kind batch. */
  batch?: Table;
  /** Why a snapshot replaced the rows: the refresh-required reason, "schema" after a column change, "" at the start. */
  reason: string;
}

/** Options of client.liveQuery. */
export interface LiveQueryOptions {
  /** Each change of the rows, after it is made. */
  onChange?(change: LiveChange): void;
  /** Each change of status. */
  onStatus?(status: Status, detail: StatusDetail): void;
  /** Every error, including those recovered from (a cut connection, a refresh-required). */
  onError?(error: Error): void;
  /** The rows and columns to keep (shape.ts): its snapshot and its stream are both read through it. */
  shape?: Shape;
  /** Aborting it closes the liveQuery. */
  signal?: AbortSignal;
}

/** What a liveQuery needs of the client. */
export interface LiveSource {
  snapshot(table: string, opts: { signal: AbortSignal; shape?: Shape }): Promise<{ rows: Table; cursor: string }>;
  stream(table: string, opts: { cursor: string; shape?: Shape }): DucktailStream<'arrow'>;
  schedule(): Schedule;
}

/**
 * LiveQuery keeps the rows of one table: a snapshot, then the stream from the
 * snapshot's cursor, so the rows are exactly the table's, without gap or duplicate. On
 * refresh-required (a reset, a cursor past the replay bounds), and when a column
 * changes, it reads a new snapshot and swaps it in whole: `rows`, `cursor` and `state`
 * change in one step and listeners never see a half-built table. Snapshot reads that
 * fail with 408, 429, 5xx or a network error are retried on the reconnect schedule;
 * other refusals (401, 403, 404 once the table is dropped) end it with status failed.
 *
 * `subscribe` and `getSnapshot` are the pair React's useSyncExternalStore takes.
 */
export class LiveQuery {
  readonly table: string;
  #source: LiveSource;
  #opts: LiveQueryOptions;
  #state: LiveState = { rows: null, cursor: '', status: 'connecting' };
  #listeners = new Set<() => void>();
  #stream: DucktailStream<'arrow'> | null = null;
  #stop = new AbortController();
  #schedule: Schedule;
  /** Bumped by each refresh: events of an older stream are ignored. */
  #generation = 0;

  /** Use client.liveQuery. */
  constructor(source: LiveSource, table: string, opts: LiveQueryOptions = {}) {
    this.table = table;
    this.#source = source;
    this.#opts = opts;
    this.#schedule = source.schedule();
    if (opts.signal) {
      if (opts.signal.aborted) queueMicrotask(() => this.close());
      else opts.signal.addEventListener('abort', () => this.close(), { once: true });
    }
    queueMicrotask(() => void this.#refresh('', ''));
  }

  get rows(): Table | null {
    return this.#state.rows;
  }

  get cursor(): string {
    return this.#state.cursor;
  }

  get status(): Status {
    return this.#state.status;
  }

  /** The current state: the same object until the next change. */
  getSnapshot = (): LiveState => this.#state;

  /** Calls listener after every change of state; returns the function that removes it. */
  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  };

  /** Stops following the table (status closed). */
  close(): void {
    if (this.#state.status === 'closed') return;
    this.#stop.abort();
    this.#generation++;
    this.#stream?.close();
    this.#stream = null;
    this.#set({ ...this.#state, status: 'closed' }, {});
    this.#listeners.clear();
  }

  /** Reads a snapshot (retrying what can be retried), swaps it in, streams from its cursor. */
  async #refresh(reason: string, refused: string): Promise<void> {
    const gen = ++this.#generation;
    this.#stream?.close();
    this.#stream = null;
    for (;;) {
      if (this.#stop.signal.aborted || gen !== this.#generation) return;
      let snap: { rows: Table; cursor: string };
      try {
        snap = await this.#source.snapshot(this.table, { signal: this.#stop.signal, shape: this.#opts.shape });
      } catch (err) {
        if (this.#stop.signal.aborted || gen !== this.#generation) return;
        const error = err instanceof Error ? err : new Error(String(err));
        this.#error(error);
        if (this.#stop.signal.aborted) return;
        if (error instanceof HttpError && !error.retryable) {
          this.#set({ ...this.#state, status: 'failed' }, { error, reason: String(error.status) });
          return;
        }
        const delayMs = (error instanceof HttpError ? error.retryAfterMs : 0) + this.#schedule.jitter();
        this.#set({ ...this.#state, status: 'reconnecting' }, { error, delayMs });
        await sleep(delayMs, this.#stop.signal);
        continue;
      }
      if (gen !== this.#generation) return;
      if (refused && snap.cursor === refused) {
        const error = new RefreshRequiredError(reason, refused);
        this.#error(error);
        this.#set({ ...this.#state, status: 'failed' }, { error, reason });
        return;
      }
      this.#schedule.reset();
      const state: LiveState = { rows: snap.rows, cursor: snap.cursor, status: this.#state.status };
      this.#set(state, {});
      this.#change({ ...state, rows: snap.rows, kind: 'snapshot', reason });
      this.#follow(gen, snap.cursor);
      return;
    }
  }

  #follow(gen: number, cursor: string): void {
    const stream = this.#source.stream(this.table, { cursor, shape: this.#opts.shape });
    this.#stream = stream;
    stream.subscribe({
      next: (ev) => {
        if (gen === this.#generation) this.#apply(gen, ev);
      },
      status: (status, detail) => {
        if (gen !== this.#generation) return;
        if (status === 'refresh-required') {
          const err = stream.error;
          const reason = err instanceof RefreshRequiredError ? err.reason : '';
          this.#set({ ...this.#state, status: 'refresh-required' }, detail);
          void this.#refresh(reason, err instanceof RefreshRequiredError ? err.cursor : '');
          return;
        }
        if (status === 'closed') return;
        this.#set({ ...this.#state, status }, detail);
      },
      error: (err) => {
        if (gen === this.#generation) this.#error(err);
      },
    });
  }

  #apply(gen: number, ev: StreamEvent<'arrow'>): void {
    const rows = this.#state.rows;
    if (!rows) return;
    if (!sameColumns(rows.schema, ev.schema)) {
      // A column was added, dropped or renamed: the snapshot has every row in the new shape.
      void this.#refresh('schema', '');
      return;
    }
    if (ev.type === 'schema') {
      this.#set({ ...this.#state, cursor: ev.cursor }, {});
      return;
    }
    const next = ev.rows.numRows > 0 ? rows.concat(ev.rows) : rows;
    const state: LiveState = { rows: next, cursor: ev.cursor, status: this.#state.status };
    this.#set(state, {});
    if (gen === this.#generation) this.#change({ ...state, rows: next, kind: 'batch', batch: ev.rows, reason: '' });
  }

  #set(state: LiveState, detail: StatusDetail): void {
    if (this.#state.status === 'closed') return;
    const statusChanged = state.status !== this.#state.status;
    this.#state = state;
    if (statusChanged) this.#handler('onStatus', () => this.#opts.onStatus?.(state.status, detail));
    for (const l of [...this.#listeners]) this.#handler('listener', l);
  }

  #change(change: LiveChange): void {
    this.#handler('onChange', () => this.#opts.onChange?.(change));
  }

  #handler(name: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#error(new HandlerError(name, err));
    }
  }

  #error(err: Error): void {
    try {
      this.#opts.onError?.(err);
    } catch {
      // An error handler that throws has nobody left to tell.
    }
  }
}

/** Whether two schemas have the same column names and types, in order. */
export function sameColumns(a: Schema, b: Schema): boolean {
  return (
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f.name === b.fields[i]!.name && String(f.type) === String(b.fields[i]!.type))
  );
}
