// The reconnect schedule of docs/consuming.md, "Reconnecting: backoff, jitter, and a
// watchdog": what a stream does after each way a connection can end.

/** Upper bound of any delay the server asks for (retry:, retry_ms, Retry-After). */
export const MAX_SERVER_DELAY_MS = 3_600_000;

/** Tuning of the schedule; every field is in milliseconds. */
export interface BackoffOptions {
  /** Ceiling of the first jittered delay; each further attempt doubles it. Default 500. */
  baseMs?: number;
  /** Cap of the jittered part of a delay. Default 30,000. */
  capMs?: number;
  /** A connection held this long (or one that delivered a batch) resets the schedule. Default 30,000. */
  stableAfterMs?: number;
  /** A uniform random number in [0, 1); Math.random unless a test sets it. */
  random?: () => number;
}

/**
 * How a connection ended, as the schedule sees it:
 * - `abrupt`: the body ended without a terminal event, the network failed, or the
 *   watchdog took the silence for a dead connection;
 * - `http`: a refusal before the stream started, with its Retry-After in ms (0 if none);
 * - `reconnect`: the server's terminal reconnect event and its retry_ms;
 * - `refresh-required`, `failure`: the other terminal events;
 * - `undecodable`: a payload that does not decode.
 * `heldMs` is how long the connection was open, `delivered` whether it delivered a batch.
 */
export type Ending =
  | { kind: 'abrupt'; heldMs: number; delivered: boolean }
  | { kind: 'http'; status: number; retryAfterMs: number; heldMs: number; delivered: boolean }
  | { kind: 'reconnect'; retryMs: number; heldMs: number; delivered: boolean }
  | { kind: 'refresh-required' }
  | { kind: 'failure' }
  | { kind: 'undecodable' };

/** What to do next: connect again after delayMs, or stop for good with a status. */
export type Decision = { retry: true; delayMs: number } | { retry: false; status: 'refresh-required' | 'failed' };

/**
 * Whether an HTTP refusal is worth retrying: 408 and 429 (after Retry-After), and every
 * 5xx (503 is admission or a drain). Any other status will not change by retrying.
 */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Schedule is capped exponential backoff with full jitter ("Exponential Backoff And
 * Jitter", AWS Architecture Blog, 2015): attempt n waits floor + random(0,
 * min(cap, base·2ⁿ)), where floor is what the server asked for (its SSE retry field
 * after an abrupt close, Retry-After after a 408/429/5xx, retry_ms after a reconnect
 * event). The attempt count starts again only after a connection held for stableAfterMs
 * or delivered a batch, so that a server that accepts and closes at once cannot pin a
 * client at short delays.
 */
export class Schedule {
  readonly baseMs: number;
  readonly capMs: number;
  readonly stableAfterMs: number;
  #random: () => number;
  #attempt = 0;
  #retryMs = 0;

  constructor(opts: BackoffOptions = {}) {
    this.baseMs = positive(opts.baseMs, 500);
    this.capMs = Math.max(positive(opts.capMs, 30_000), this.baseMs);
    this.stableAfterMs = positive(opts.stableAfterMs, 30_000);
    this.#random = opts.random ?? Math.random;
  }

  /** The consecutive attempts counted since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The server's SSE reconnection time (its retry: field), the floor after an abrupt close. */
  get retryMs(): number {
    return this.#retryMs;
  }

  /** Records the server's retry: field. */
  setRetry(ms: number): void {
    this.#retryMs = clampServer(ms);
  }

  /** Starts the schedule again: a batch was delivered. */
  reset(): void {
    this.#attempt = 0;
  }

  /** The jittered part of the next delay; counts the attempt. */
  jitter(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.#attempt, 60));
    this.#attempt++;
    return Math.floor(this.#random() * (ceiling + 1));
  }

  /** Decides what follows a connection's ending. */
  decide(ending: Ending): Decision {
    switch (ending.kind) {
      case 'refresh-required':
        return { retry: false, status: 'refresh-required' };
      case 'failure':
      case 'undecodable':
        return { retry: false, status: 'failed' };
    }
    if (ending.kind === 'http' && !retryableStatus(ending.status)) return { retry: false, status: 'failed' };
    if (ending.delivered || ending.heldMs >= this.stableAfterMs) this.reset();
    switch (ending.kind) {
      case 'http':
        return { retry: true, delayMs: clampServer(ending.retryAfterMs) + this.jitter() };
      case 'reconnect':
        return { retry: true, delayMs: clampServer(ending.retryMs) + this.jitter() };
      case 'abrupt':
        return { retry: true, delayMs: this.#retryMs + this.jitter() };
    }
  }
}

/**
 * Reads a Retry-After header (RFC 9110 §10.2.3), delay-seconds or an HTTP-date, as
 * milliseconds from now: 0 when absent, malformed or past; at most an hour.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number {
  const v = (value ?? '').trim();
  if (v === '') return 0;
  if (/^[0-9]+$/.test(v)) return clampServer(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : clampServer(at - now);
}

function clampServer(ms: number): number {
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_SERVER_DELAY_MS) : 0;
}

function positive(v: number | undefined, dflt: number): number {
  return v !== undefined && Number.isFinite(v) && v > 0 ? v : dflt;
}

/** Resolves after ms, or at once when signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
