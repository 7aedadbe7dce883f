// The data of schema and batch events (docs/consuming.md, "The events"): with encoding
// arrow the standard base64 (RFC 4648 §4) of a self-contained Arrow IPC stream, with
// encoding json a JSON object; and the JSON data of the terminal events.
import { tableFromIPC } from 'apache-arrow';
import type { Table } from 'apache-arrow';
import type { ExactRow, ExactValue } from './values.js';

/** A column of the json encoding's schema event. */
export interface JsonColumn {
  name: string;
  /** The DuckDB type: BIGINT, DECIMAL(9,2), TIMESTAMP, … */
  type: string;
}

const fromBase64: (text: string) => Uint8Array = (() => {
  const native = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (native) return (s: string) => native(s);
  const B = (globalThis as unknown as { Buffer?: { from(s: string, enc: string): Uint8Array } }).Buffer;
  if (B) {
    return (s: string) => {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new Error('payload is not base64');
      return B.from(s, 'base64');
    };
  }
  return (s: string) => {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  };
})();

/**
 * Decodes an Arrow payload; throws when it is not base64 or not an Arrow IPC stream with
 * at least one column (every table has one).
 */
export function decodeArrow(data: string): Table {
  const bytes = fromBase64(data);
  if (bytes.length === 0) throw new Error('payload is empty');
  const table = tableFromIPC(bytes);
  if (table.schema.fields.length === 0) throw new Error('payload holds no Arrow schema');
  return table;
}

/** The columns of a json schema event; throws when data is not one. */
export function decodeJsonSchema(data: string): JsonColumn[] {
  const parsed = JSON.parse(data) as { columns?: unknown };
  if (!Array.isArray(parsed.columns)) throw new Error('schema event without columns');
  return parsed.columns.map((c: { name?: unknown; type?: unknown }) => {
    if (typeof c?.name !== 'string' || typeof c?.type !== 'string') throw new Error('schema column without name or type');
    return { name: c.name, type: c.type };
  });
}

const BIG_INTEGER = /^(U?BIGINT|U?HUGEINT|INT8|LONG|INT64)$/i;

/**
 * The rows of a json batch event as objects, positional values named by columns:
 * integers of 64 bits and more become bigint (the server writes those beyond 2^53 as
 * strings); everything else is kept as the server wrote it. Throws when data is not a
 * batch of rows as wide as the schema.
 */
export function decodeJsonRows(data: string, columns: JsonColumn[]): ExactRow[] {
  const parsed = JSON.parse(data) as { rows?: unknown };
  if (!Array.isArray(parsed.rows)) throw new Error('batch event without rows');
  const big = columns.map((c) => BIG_INTEGER.test(c.type));
  return parsed.rows.map((r: unknown) => {
    if (!Array.isArray(r) || r.length !== columns.length) {
      throw new Error(`a row of ${Array.isArray(r) ? r.length : 'no'} values for ${columns.length} columns`);
    }
    const row: ExactRow = {};
    columns.forEach((c, i) => {
      const v = r[i] as ExactValue;
      row[c.name] = big[i] && v !== null ? BigInt(v as string | number) : v;
    });
    return row;
  });
}

/** The fields of a terminal event's data; missing ones are "" or 0. */
export interface TerminalData {
  reason: string;
  code: string;
  message: string;
  retryMs: number;
}

/** Reads a terminal event's JSON data; data that does not parse leaves the defaults. */
export function decodeTerminal(data: string): TerminalData {
  let d: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(data);
    if (parsed && typeof parsed === 'object') d = parsed as Record<string, unknown>;
  } catch {
    // The event's name alone says what happened.
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const retry = Number(d.retry_ms);
  return { reason: str(d.reason), code: str(d.code), message: str(d.message), retryMs: Number.isFinite(retry) ? retry : 0 };
}
