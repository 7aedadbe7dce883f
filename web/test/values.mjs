// Arrow values as JSON, the way apache-arrow decodes them, for the Node.js tests: every
// value of every type ducktail sends is read with Vector.get and turned into JSON without
// losing digits. 64-bit integers, decimals (HUGEINT and UHUGEINT are decimal128(38,0)) and
// TIME (microseconds) are strings; dates "YYYY-MM-DD"; timestamps ISO 8601 in UTC to the
// millisecond (JavaScript's Date); BLOB base64; INTERVAL {months, days, nanoseconds};
// lists arrays, structs and maps objects, a union its member's value, a dictionary its
// decoded value.
import { DateUnit, Type } from 'apache-arrow';

// decimalBigInt reads a decimal's unscaled value from its 32-bit words (little-endian
// two's complement), as apache-arrow's util.bigNumToBigInt does, except that the
// latter misreads -2^127 (HUGEINT's minimum) in apache-arrow 21.
function decimalBigInt(words) {
  let n = 0n;
  for (let i = words.length - 1; i >= 0; i--) n = (n << 32n) | BigInt(words[i] >>> 0);
  const bits = BigInt(words.length * 32);
  return n >> (bits - 1n) ? n - (1n << bits) : n;
}

export function jsonValue(type, v) {
  if (v === null || v === undefined) return null;
  switch (type.typeId) {
    case Type.Date:
      return new Date(v).toISOString().slice(0, type.unit === DateUnit.DAY ? 10 : undefined);
    case Type.Timestamp:
      return new Date(v).toISOString();
    case Type.Decimal: {
      const n = decimalBigInt(v);
      const digits = (n < 0n ? -n : n).toString().padStart(type.scale + 1, '0');
      const sign = n < 0n ? '-' : '';
      return type.scale ? `${sign}${digits.slice(0, -type.scale)}.${digits.slice(-type.scale)}` : sign + digits;
    }
    case Type.Binary:
      return Buffer.from(v).toString('base64');
    case Type.Interval: {
      const nanos = BigInt(v[2] >>> 0) + (BigInt(v[3]) << 32n);
      return { months: v[0], days: v[1], nanoseconds: nanos.toString() };
    }
    case Type.List:
    case Type.FixedSizeList:
      return [...v].map((x) => jsonValue(type.children[0].type, x));
    case Type.Struct:
      return Object.fromEntries(type.children.map((f) => [f.name, jsonValue(f.type, v[f.name])]));
    case Type.Map: {
      const valueType = type.children[0].type.children[1].type;
      return Object.fromEntries([...v].map(([k, x]) => [String(k), jsonValue(valueType, x)]));
    }
    case Type.Dictionary:
      return jsonValue(type.dictionary, v);
  }
  return typeof v === 'bigint' ? v.toString() : v;
}

// rowsOf returns every row of an Arrow table as an object of JSON values.
export function rowsOf(table) {
  const fields = table.schema.fields;
  const rows = [];
  for (let r = 0; r < table.numRows; r++) {
    rows.push(Object.fromEntries(fields.map((f, c) => [f.name, jsonValue(f.type, table.getChildAt(c).get(r))])));
  }
  return rows;
}
