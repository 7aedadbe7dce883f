// A streaming parser of text/event-stream, by WHATWG HTML, "Server-sent events",
// section "Interpreting an event stream".

/** One dispatched event: its type, the last event ID buffer at dispatch, and its data. */
export interface SSEEvent {
  /** The event field, or "message" when the event had none. */
  type: string;
  /** The last event ID buffer when the event was dispatched ("" when none was set). */
  id: string;
  /** The data fields joined with LF. */
  data: string;
}

/**
 * SSEParser turns text that arrives in pieces of any size into events, by the WHATWG
 * rules: lines end in CRLF, LF or CR, and a CR may end one piece and its LF begin the
 * next (the LF is then skipped; a line ending in CR is complete at once, so an event
 * ending in CR is dispatched without waiting for the next piece); one leading U+FEFF is
 * dropped; a line starting with ":" is a comment; "field: value" loses one leading
 * space of the value, and a line without ":" is a field with an empty value; data
 * fields are joined with LF; an event is dispatched at a blank line only when its data
 * buffer is not empty ("message" when no event field was seen); the id field sets the
 * last event ID buffer, which persists across events, unless it contains NUL; retry sets
 * the reconnection time when it is all ASCII digits; other fields are ignored. An event
 * not followed by its blank line when the input ends is never dispatched.
 *
 * Feed it decoded text (a streaming TextDecoder keeps multi-byte characters whole).
 */
export class SSEParser {
  #onEvent: (event: SSEEvent) => void;
  #onRetry: (ms: number) => void;
  #pending = '';
  #started = false;
  #skipLF = false;
  #eventType = '';
  #data: string[] = [];
  #lastId = '';

  /**
   * @param onEvent called with each dispatched event, synchronously inside push
   * @param onRetry called with each valid retry field, in milliseconds
   */
  constructor(onEvent: (event: SSEEvent) => void, onRetry: (ms: number) => void = () => {}) {
    this.#onEvent = onEvent;
    this.#onRetry = onRetry;
  }

  /** The last event ID buffer. */
  get lastEventId(): string {
    return this.#lastId;
  }

  /** Parses the next piece of the stream, dispatching every event it completes. */
  push(text: string): void {
    let s = this.#pending + text;
    this.#pending = '';
    if (!this.#started && s.length > 0) {
      this.#started = true;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    let pos = 0;
    if (this.#skipLF && s.length > 0) {
      this.#skipLF = false;
      if (s.charCodeAt(0) === 0x0a) pos = 1;
    }
    while (pos < s.length) {
      const cr = s.indexOf('\r', pos);
      const lf = s.indexOf('\n', pos);
      let end: number;
      if (cr < 0 && lf < 0) break;
      if (cr < 0) end = lf;
      else if (lf < 0) end = cr;
      else end = Math.min(cr, lf);
      this.#line(s.slice(pos, end));
      pos = end + 1;
      if (s.charCodeAt(end) === 0x0d) {
        if (pos === s.length) this.#skipLF = true;
        else if (s.charCodeAt(pos) === 0x0a) pos++;
      }
    }
    this.#pending = s.slice(pos);
  }

  /** Ends the input: an incomplete line or event is discarded. */
  end(): void {
    this.#pending = '';
    this.#data = [];
    this.#eventType = '';
    this.#skipLF = false;
  }

  #line(line: string): void {
    if (line === '') {
      this.#dispatch();
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return;
    const colon = line.indexOf(':');
    let field = line;
    let value = '';
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    }
    switch (field) {
      case 'event':
        this.#eventType = value;
        break;
      case 'data':
        this.#data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.#lastId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.#onRetry(Number(value));
        break;
    }
  }

  #dispatch(): void {
    if (this.#data.length === 0) {
      this.#eventType = '';
      return;
    }
    const event = { type: this.#eventType || 'message', id: this.#lastId, data: this.#data.join('\n') };
    this.#data = [];
    this.#eventType = '';
    this.#onEvent(event);
  }
}
