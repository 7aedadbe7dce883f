// Exact JavaScript values of Arrow columns (Arrow columnar format, "Physical memory
// layout"). apache-arrow's own getters turn timestamps and dates into float
// milliseconds, which lose microseconds far from 1970 and overflow Date past ±275,760
// years; these readers go to the buffers instead and never round.
import { DataType, DateUnit, IntervalUnit, TimeUnit, Type, Vector } from 'apache-arrow';
import type { Data, Table } from 'apache-arrow';

/** A value of a row as `toObjects` returns it. */
export type ExactValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | ExactValue[]
  | Map<ExactValue, ExactValue>
  | { [field: string]: ExactValue };

/** One row: column name to value. */
export type ExactRow = Record<string, ExactValue>;

type Reader = (index: number) => ExactValue;

/**
 * The rows of an Arrow table as plain objects of exact values (docs: clients/js/README.md,
 * "Column types"): 64-bit integers (BIGINT, UBIGINT) as bigint; DECIMAL (and HUGEINT,
 * which DuckDB sends as DECIMAL(38,0)) as its decimal text ("-12.05"); DATE as
 * "YYYY-MM-DD"; TIME as "HH:MM:SS[.fff…]"; TIMESTAMP as ISO 8601 with the fraction of a
 * second its unit holds, trailing zeros dropped ("2016-01-01T12:30:00.25"), and a
 * trailing Z when it has a time zone (TIMESTAMPTZ): the text the server's json encoding
 * writes; BLOB as Uint8Array; INTERVAL as { months, days, nanoseconds (bigint) };
 * LIST as an array, STRUCT as an object, MAP as a Map; smaller integers, floats, booleans and strings as the JS primitive; NULL as null.
 */
export function toObjects(table: Table): ExactRow[] {
  const out: ExactRow[] = [];
  const names = table.schema.fields.map((f) => f.name);
  for (const batch of table.batches) {
    const readers = names.map((_, c) => reader(batch.data.children[c] as Data));
    for (let r = 0; r < batch.numRows; r++) {
      const row: ExactRow = {};
      names.forEach((n, c) => {
        row[n] = readers[c]!(r);
      });
      out.push(row);
    }
  }
  return out;
}

/** The exact value of one cell of a column (a Vector of the table), as toObjects reads it. */
export function exactValue(column: Vector, index: number): ExactValue {
  let i = index;
  for (const data of column.data) {
    if (i < data.length) return reader(data)(i);
    i -= data.length;
  }
  throw new RangeError(`row ${index} is outside a column of ${column.length} rows`);
}

/** Builds the reader of one chunk of a column. */
function reader(data: Data): Reader {
  const value = plain(data);
  if (data.nullCount === 0) return value;
  return (i) => (data.getValid(i) ? value(i) : null);
}

function plain(data: Data): Reader {
  const type: DataType = data.type;
  const values = data.values as ArrayLike<number | bigint>;
  switch (type.typeId) {
    case Type.Timestamp: {
      const unit = (type as unknown as { unit: TimeUnit }).unit;
      const zone = (type as unknown as { timezone?: string | null }).timezone ? 'Z' : '';
      return (i) => timestampText(BigInt(values[i]!), unit) + zone;
    }
    case Type.Date: {
      const unit = (type as unknown as { unit: DateUnit }).unit;
      if (unit === DateUnit.DAY) return (i) => dateText(BigInt(values[i]!));
      return (i) => {
        const ms = BigInt(values[i]!);
        return dateText(floorDiv(ms, 86_400_000n));
      };
    }
    case Type.Time: {
      const unit = (type as unknown as { unit: TimeUnit }).unit;
      return (i) => timeText(BigInt(values[i]!), unit);
    }
    case Type.Decimal: {
      const { scale, bitWidth } = type as unknown as { scale: number; bitWidth: number };
      const words = bitWidth / 32;
      const u32 = data.values as Uint32Array;
      return (i) => decimalText(u32.subarray(i * words, (i + 1) * words), scale);
    }
    case Type.Interval: {
      const unit = (type as unknown as { unit: IntervalUnit }).unit;
      const v = data.values as Int32Array;
      if (unit === IntervalUnit.MONTH_DAY_NANO) {
        const nanos = new BigInt64Array(v.buffer, v.byteOffset, v.length / 2);
        return (i) => ({ months: v[4 * i]!, days: v[4 * i + 1]!, nanoseconds: nanos[2 * i + 1]! });
      }
      if (unit === IntervalUnit.DAY_TIME) return (i) => ({ days: v[2 * i]!, milliseconds: v[2 * i + 1]! });
      return (i) => ({ months: v[i]! });
    }
    case Type.List: {
      const child = reader(data.children[0] as Data);
      const offsets = data.valueOffsets as ArrayLike<number>;
      return (i) => {
        const out: ExactValue[] = [];
        for (let j = Number(offsets[i]); j < Number(offsets[i + 1]); j++) out.push(child(j));
        return out;
      };
    }
    case Type.FixedSizeList: {
      const child = reader(data.children[0] as Data);
      const size = (type as unknown as { listSize: number }).listSize;
      return (i) => Array.from({ length: size }, (_, k) => child(i * size + k));
    }
    case Type.Struct: {
      const names = type.children.map((f) => f.name);
      const readers = data.children.map((c) => reader(c as Data));
      return (i) => {
        const obj: { [field: string]: ExactValue } = {};
        names.forEach((n, k) => {
          obj[n] = readers[k]!(i);
        });
        return obj;
      };
    }
    case Type.Map: {
      const entries = data.children[0] as Data;
      const key = reader(entries.children[0] as Data);
      const val = reader(entries.children[1] as Data);
      const offsets = data.valueOffsets as ArrayLike<number>;
      return (i) => {
        const m = new Map<ExactValue, ExactValue>();
        for (let j = Number(offsets[i]); j < Number(offsets[i + 1]); j++) m.set(key(j), val(j));
        return m;
      };
    }
  }
  const vector = new Vector([data]);
  return (i) => vector.get(i) as ExactValue;
}

const PER_SECOND: Record<number, bigint> = {
  [TimeUnit.SECOND]: 1n,
  [TimeUnit.MILLISECOND]: 1_000n,
  [TimeUnit.MICROSECOND]: 1_000_000n,
  [TimeUnit.NANOSECOND]: 1_000_000_000n,
};

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

/** The fraction of a second without trailing zeros: ".25" for 250,000 µs, "" for 0. */
function fraction(sub: bigint, perSecond: bigint): string {
  const digits = perSecond.toString().length - 1;
  if (digits === 0 || sub === 0n) return '';
  return '.' + sub.toString().padStart(digits, '0').replace(/0+$/, '');
}

function timestampText(v: bigint, unit: TimeUnit): string {
  const perSecond = PER_SECOND[unit]!;
  const seconds = floorDiv(v, perSecond);
  const sub = v - seconds * perSecond;
  const days = floorDiv(seconds, 86_400n);
  const clock = clockText(seconds - days * 86_400n);
  return `${dateText(days)}T${clock}${fraction(sub, perSecond)}`;
}

function timeText(v: bigint, unit: TimeUnit): string {
  const perSecond = PER_SECOND[unit]!;
  const seconds = v / perSecond;
  const sub = v % perSecond;
  return clockText(seconds) + fraction(sub, perSecond);
}

function clockText(secondsOfDay: bigint): string {
  const s = Number(secondsOfDay);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(Math.floor(s / 3600))}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}`;
}

/**
 * The proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant,
 * "chrono-Compatible Low-Level Date Algorithms", civil_from_days), as ISO 8601:
 * "YYYY-MM-DD", or with a sign and six or more digits outside 0000–9999 (as
 * Date.prototype.toISOString writes them).
 */
export function dateText(days: bigint): string {
  const z = days + 719_468n;
  const era = floorDiv(z, 146_097n);
  const doe = z - era * 146_097n;
  const yoe = (doe - doe / 1_460n + doe / 36_524n - doe / 146_096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const d = doy - (153n * mp + 2n) / 5n + 1n;
  const m = mp < 10n ? mp + 3n : mp - 9n;
  const y = yoe + era * 400n + (m <= 2n ? 1n : 0n);
  const abs = (y < 0n ? -y : y).toString();
  const year = y < 0n ? `-${abs.padStart(6, '0')}` : y > 9999n ? `+${abs.padStart(6, '0')}` : abs.padStart(4, '0');
  return `${year}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/** The decimal text of a two's-complement little-endian integer of 32-bit words and a scale. */
export function decimalText(words: Uint32Array, scale: number): string {
  let n = 0n;
  for (let k = words.length - 1; k >= 0; k--) n = (n << 32n) | BigInt(words[k]!);
  const bits = BigInt(words.length * 32);
  if (n >> (bits - 1n)) n -= 1n << bits;
  const sign = n < 0n ? '-' : '';
  let digits = (n < 0n ? -n : n).toString();
  if (scale <= 0) return sign + digits + '0'.repeat(-scale);
  digits = digits.padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}
