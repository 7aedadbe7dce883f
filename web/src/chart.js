// LiveChart draws one numeric column with uPlot against the table's first time column
// (DATE or TIMESTAMP) when it has one, else against the row number, keeping the latest
// `capacity` rows of every numeric column so the charted column can change.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const HEIGHT = 220;
/** uPlot's default size of an axis and its padding of the plot's right side, in CSS px. */
const AXIS_SIZE = 50;
const RIGHT_PADDING = AXIS_SIZE / 2;

/**
 * What the x-axis shows.
 * @typedef {object} XAxis
 * @property {string} label the time column's name, or 'row'
 * @property {boolean} time whether x values are points in time, in seconds since the epoch
 * @property {(x: number) => string} format the legend's text for an x value
 */

/** @type {XAxis} */
export const ROW_AXIS = Object.freeze({ label: 'row', time: false, format: (x) => x.toLocaleString() });

/** A 2D context that only measures text, so that uPlot's own context keeps its font. */
const measure = document.createElement('canvas').getContext('2d');

/** The width in CSS px of the widest line of a tick label drawn in the axis's font. */
function labelWidth(u, axisIdx, label) {
  if (label === null || label === undefined) return 0;
  measure.font = u.axes[axisIdx].font[0];
  const widths = String(label).split('\n').map((line) => measure.measureText(line).width);
  return Math.max(...widths) / devicePixelRatio;
}

export class LiveChart {
  #el;
  #capacity;
  /** @type {XAxis} */
  #x = ROW_AXIS;
  /** @type {number[]} row numbers or times */
  #xs = [];
  /** @type {Map<string, (number|null)[]>} values by column */
  #columns = new Map();
  #column = '';
  /** @type {uPlot | null} */
  #plot = null;
  #dirty = false;
  /** The last x tick label uPlot laid out, which the right padding makes room for. */
  #lastXLabel = '';

  /** @param {HTMLElement} el */
  constructor(el, capacity) {
    this.#el = el;
    this.#capacity = capacity;
    new ResizeObserver(() => this.#plot?.setSize({ width: this.#width(), height: HEIGHT })).observe(el);
  }

  /**
   * Forgets every point and charts `names` (the numeric columns) against `x` from now on.
   * @param {string[]} names
   * @param {XAxis} x
   */
  reset(names, x) {
    this.#x = x;
    this.#xs = [];
    this.#columns = new Map(names.map((n) => [n, []]));
    if (!this.#columns.has(this.#column)) this.#column = names[0] ?? '';
    this.#rebuild();
  }

  /** Adds columns that a schema change introduced; their earlier points are null. */
  addColumns(names) {
    for (const n of names) {
      if (!this.#columns.has(n)) this.#columns.set(n, new Array(this.#xs.length).fill(null));
    }
    if (!this.#column && names.length) {
      this.#column = names[0];
      this.#rebuild();
    }
  }

  /** The column charted, or '' when there is none. */
  get column() {
    return this.#column;
  }

  /** The x-axis's label: the time column's name or 'row'. */
  get x() {
    return this.#x.label;
  }

  /** Charts another column. */
  show(name) {
    if (name === this.#column || !this.#columns.has(name)) return;
    this.#column = name;
    this.#rebuild();
  }

  /**
   * Adds one row: its x (number, or time in seconds) and its numeric values by column.
   * @param {number} x
   * @param {Map<string, number|null>} values
   */
  push(x, values) {
    this.#xs.push(x);
    for (const [name, ys] of this.#columns) ys.push(values.get(name) ?? null);
    this.#dirty = true;
  }

  /** Redraws when points were added since the last redraw. */
  flush() {
    if (!this.#dirty) return;
    this.#dirty = false;
    const extra = this.#xs.length - this.#capacity;
    if (extra > 0) {
      this.#xs.splice(0, extra);
      for (const ys of this.#columns.values()) ys.splice(0, extra);
    }
    this.#plot?.setData(this.#data());
    this.#describe();
  }

  #data() {
    return [this.#xs, this.#columns.get(this.#column) ?? []];
  }

  #width() {
    return Math.max(this.#el.clientWidth, 200);
  }

  #rebuild() {
    this.#plot?.destroy();
    this.#plot = null;
    this.#dirty = true;
    if (!this.#column) {
      this.flush();
      return;
    }
    const x = this.#x;
    this.#plot = new uPlot({
      width: this.#width(),
      height: HEIGHT,
      // Dates and timestamps on the axis are in UTC, as the rows show them.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'UTC'),
      scales: { x: { time: x.time } },
      // uPlot centres a tick label on its tick: the last one may reach past the plot's
      // right edge by half its width, so the padding there is at least that.
      padding: [null, (u) => Math.max(RIGHT_PADDING, Math.ceil(labelWidth(u, 0, this.#lastXLabel) / 2) + 4), null, null],
      axes: [
        {
          label: x.label,
          size: (u, values) => {
            this.#lastXLabel = values?.at(-1) ?? '';
            return AXIS_SIZE;
          },
        },
        {
          label: this.#column,
          // As wide as the widest label, so that large values are not cut off on the left.
          size: (u, values) => {
            const axis = u.axes[1];
            const widest = Math.max(0, ...(values ?? []).map((v) => labelWidth(u, 1, v)));
            return Math.max(AXIS_SIZE, Math.ceil(axis.ticks.size + axis.gap + widest + 4));
          },
        },
      ],
      series: [
        { label: x.label, value: (u, v) => (v === null || v === undefined ? '--' : x.format(v)) },
        { label: this.#column, stroke: '#1d4ed8', width: 1.5, points: { show: false } },
      ],
      legend: { live: true },
    }, this.#data(), this.#el);
    this.flush();
  }

  #describe() {
    const ys = this.#columns.get(this.#column) ?? [];
    this.#el.dataset.points = String(this.#xs.length);
    this.#el.dataset.x = this.#x.label;
    const last = ys.length ? ys[ys.length - 1] : null;
    const by = this.#x.time ? ` by ${this.#x.label}` : '';
    this.#el.setAttribute('aria-label', this.#column
      ? `Line chart of ${this.#column}${by} over the latest ${this.#xs.length.toLocaleString()} rows; latest value ${last ?? 'NULL'}`
      : 'No numeric column to chart');
  }
}
