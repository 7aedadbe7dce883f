// LiveChart draws one numeric column against the row number with uPlot, keeping the
// latest `capacity` rows of every numeric column so the charted column can change.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const HEIGHT = 220;

export class LiveChart {
  #el;
  #capacity;
  /** @type {number[]} row numbers */
  #xs = [];
  /** @type {Map<string, (number|null)[]>} values by column */
  #columns = new Map();
  #column = '';
  /** @type {uPlot | null} */
  #plot = null;
  #dirty = false;

  /** @param {HTMLElement} el */
  constructor(el, capacity) {
    this.#el = el;
    this.#capacity = capacity;
    new ResizeObserver(() => this.#plot?.setSize({ width: this.#width(), height: HEIGHT })).observe(el);
  }

  /** Forgets every point and charts `names` from now on (the numeric columns). */
  reset(names) {
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

  get column() {
    return this.#column;
  }

  /** Charts another column. */
  show(name) {
    if (name === this.#column || !this.#columns.has(name)) return;
    this.#column = name;
    this.#rebuild();
  }

  /**
   * Adds one row: its number and its numeric values by column.
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
    this.#plot = new uPlot({
      width: this.#width(),
      height: HEIGHT,
      scales: { x: { time: false } },
      axes: [{ label: 'row' }, { label: this.#column }],
      series: [
        { label: 'row' },
        { label: this.#column, stroke: '#1d4ed8', width: 1.5, points: { show: false } },
      ],
      legend: { live: true },
    }, this.#data(), this.#el);
    this.flush();
  }

  #describe() {
    const ys = this.#columns.get(this.#column) ?? [];
    this.#el.dataset.points = String(this.#xs.length);
    const last = ys.length ? ys[ys.length - 1] : null;
    this.#el.setAttribute('aria-label', this.#column
      ? `Line chart of ${this.#column} over the latest ${this.#xs.length} rows; latest value ${last ?? 'NULL'}`
      : 'No numeric column to chart');
  }
}
