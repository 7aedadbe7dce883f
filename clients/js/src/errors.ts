// The errors a stream, a liveQuery, a snapshot and a query report: each names which of
// the endings of docs/consuming.md ("The events", "Before the stream: status codes")
// happened.

/** The RFC 9457 problem+json body of a refusal, as far as it was readable. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  [field: string]: unknown;
}

/**
 * HttpError is a refusal before a stream or a read started: a status other than 200,
 * with the problem+json body and the Retry-After (in ms, 0 when none). `retryable` says
 * whether the client retries it (408, 429, 5xx) or stops (every other 4xx).
 */
export class HttpError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  readonly retryAfterMs: number;
  readonly retryable: boolean;

  constructor(status: number, problem: Problem | null, retryAfterMs: number, retryable: boolean, what: string) {
    const detail = problem?.detail ?? problem?.title ?? '';
    super(`${what}: HTTP ${status}${problem?.code ? ` ${problem.code}` : ''}${detail ? `: ${detail}` : ''}`);
    this.name = 'HttpError';
    this.status = status;
    this.problem = problem;
    this.retryAfterMs = retryAfterMs;
    this.retryable = retryable;
  }
}

/** RefreshRequiredError is the terminal refresh-required event: the cursor cannot be continued. */
export class RefreshRequiredError extends Error {
  /** table_reset, table_dropped, replay_limit, invalid_cursor, … */
  readonly reason: string;
  /** The cursor the server refused. */
  readonly cursor: string;

  constructor(reason: string, cursor: string) {
    super(`refresh required (${reason}): the stream cannot continue from cursor ${cursor || '(none)'}`);
    this.name = 'RefreshRequiredError';
    this.reason = reason;
    this.cursor = cursor;
  }
}

/** ReconnectError is the terminal reconnect event; the stream resumes after retryMs. */
export class ReconnectError extends Error {
  /** server_draining, slow_consumer, max_stream_age, idle_timeout, resync */
  readonly reason: string;
  readonly retryMs: number;

  constructor(reason: string, retryMs: number) {
    super(`the server asked to reconnect (${reason}) after ${retryMs} ms`);
    this.name = 'ReconnectError';
    this.reason = reason;
    this.retryMs = retryMs;
  }
}

/**
 * FailureError ends a stream for good: the terminal failure event (token_revoked,
 * token_expired, internal), or a payload that does not decode (code "undecodable").
 */
export class FailureError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(`the stream failed (${code}): ${message}`);
    this.name = 'FailureError';
    this.code = code;
  }
}

/**
 * ConnectionLostError is an abrupt end: the body ended without a terminal event, the
 * network failed, or nothing arrived for longer than the heartbeat interval plus its
 * slack (`silence` true). The stream reconnects with backoff.
 */
export class ConnectionLostError extends Error {
  readonly silence: boolean;

  constructor(message: string, silence: boolean, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ConnectionLostError';
    this.silence = silence;
  }
}

/** HandlerError wraps what a subscriber's handler threw; the other handlers still ran. */
export class HandlerError extends Error {
  /** next, status, onChange or onStatus */
  readonly handler: string;

  constructor(handler: string, cause: unknown) {
    super(`a ${handler} handler threw: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'HandlerError';
    this.handler = handler;
  }
}
