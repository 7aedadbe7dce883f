// RateMeter measures live rows per second over a sliding window.
export class RateMeter {
  #windowMs;
  /** @type {{at: number, rows: number}[]} */
  #samples = [];

  constructor(windowMs = 10_000) {
    this.#windowMs = windowMs;
  }

  /** Records rows that arrived now. */
  add(rows, now = performance.now()) {
    this.#samples.push({ at: now, rows });
    this.#trim(now);
  }

  /** Rows per second over the window (over less, right after a reset). */
  perSecond(now = performance.now()) {
    this.#trim(now);
    const rows = this.#samples.reduce((sum, s) => sum + s.rows, 0);
    return rows / (this.#windowMs / 1000);
  }

  reset() {
    this.#samples = [];
  }

  #trim(now) {
    while (this.#samples.length && now - this.#samples[0].at > this.#windowMs) this.#samples.shift();
  }
}
