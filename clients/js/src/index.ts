// @ducktail/client: ducktail's live tables for JavaScript, in Node.js and browsers
// (clients/js/README.md).
export { DucktailClient, parseCursors } from './client.js';
export type { QueryResult, Snapshot } from './client.js';
export type { ClientOptions } from './transport.js';
export type { Shape } from './shape.js';
export { DucktailStream } from './stream.js';
export type { Encoding, Status, StatusDetail, StreamEvent, StreamOptions, Subscriber } from './stream.js';
export { LiveQuery, sameColumns } from './livequery.js';
export type { LiveChange, LiveQueryOptions, LiveState } from './livequery.js';
export { Schedule, parseRetryAfter, retryableStatus } from './backoff.js';
export type { BackoffOptions, Decision, Ending } from './backoff.js';
export { SSEParser } from './sse.js';
export type { SSEEvent } from './sse.js';
export { ConnectionLostError, FailureError, HandlerError, HttpError, ReconnectError, RefreshRequiredError } from './errors.js';
export type { Problem } from './errors.js';
export { dateText, decimalText, exactValue, toObjects } from './values.js';
export type { ExactRow, ExactValue } from './values.js';
export type { JsonColumn } from './payload.js';
