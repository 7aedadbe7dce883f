// The text and numbers the page shows for the values of Arrow columns.
import { DateUnit, IntervalUnit, Type, util } from 'apache-arrow';

/** @param {import('apache-arrow').DataType} type */
export function isNumeric(type) {
  return type.typeId === Type.Int || type.typeId === Type.Float || type.typeId === Type.Decimal;
}

/**
 * Whether a column holds points in time (DATE or TIMESTAMP), which the chart can take as
 * its x-axis. Their values are milliseconds since the Unix epoch.
 * @param {import('apache-arrow').DataType} type
 */
export function isTime(type) {
  return type.typeId === Type.Date || type.typeId === Type.Timestamp;
}

/**
 * The number a numeric value charts as, or null.
 * @param {import('apache-arrow').DataType} type
 */
export function numericValue(type, value) {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (type.typeId === Type.Decimal) return util.bigNumToNumber(value, type.scale);
  return null;
}

/**
 * The text a value is shown as; null for SQL NULL.
 * @param {import('apache-arrow').DataType} type
 * @returns {string | null}
 */
export function formatValue(type, value) {
  if (value === null || value === undefined) return null;
  switch (type.typeId) {
    case Type.Date:
      return new Date(value).toISOString().slice(0, type.unit === DateUnit.DAY ? 10 : 23);
    case Type.Timestamp: {
      const iso = new Date(value).toISOString();
      return type.timezone ? iso : iso.slice(0, -1);
    }
    case Type.Decimal:
      return decimalString(value, type.scale);
    case Type.Binary:
    case Type.LargeBinary:
    case Type.FixedSizeBinary:
      return `${value.length} bytes`;
    case Type.List:
    case Type.FixedSizeList:
    case Type.Struct:
    case Type.Map:
      // Nested values as JSON text; 64-bit integers inside as their digits.
      return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
    case Type.Interval:
      if (type.unit === IntervalUnit.MONTH_DAY_NANO) {
        const nanos = BigInt(value[2] >>> 0) + (BigInt(value[3]) << 32n);
        return `${value[0]} months ${value[1]} days ${nanos / 1000n} µs`;
      }
  }
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
  }
  return util.valueToString(value);
}

function decimalString(value, scale) {
  let digits = util.bigNumToBigInt(value).toString();
  const sign = digits.startsWith('-') ? '-' : '';
  digits = digits.replace('-', '');
  if (scale <= 0) return sign + digits;
  digits = digits.padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/**
 * Whether two schemas have the same field names and types in the same order.
 * @param {import('apache-arrow').Schema} a
 * @param {import('apache-arrow').Schema} b
 */
export function sameSchema(a, b) {
  return util.compareSchemas(a, b);
}
