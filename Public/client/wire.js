// ObsServer's wire formats as pure code: event streams (Server-Sent Events and NDJSON, contract
// section 7) parsed from chunks as they arrive, and URL path segments (contract section 1).
// No DOM, no fetch, no globals: /client/obs.js and the dashboard use it in browsers, and
// Tests/js test it under Node.
//
//   const parser = new SSEParser();
//   for (const { event, data, id } of parser.push(chunk)) …   // chunk: a string or bytes
//
// The SSE parser follows the WHATWG HTML standard's rules for EventSource ("Parsing an event
// stream", "Interpreting an event stream"), from the byte-order mark to the `retry:` field.

const utf8 = new TextEncoder();

/** The byte is one of RFC 3986's unreserved characters `A-Z a-z 0-9 - . _ ~`, sent as it is. */
function unreserved(byte) {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39)
    || byte === 0x2d || byte === 0x2e || byte === 0x5f || byte === 0x7e;
}

/**
 * One URL path segment for an id, a name or a key path: its UTF-8 bytes, each percent-encoded
 * unless unreserved. The server splits the path at `/` first and decodes each segment on its own
 * (contract 1), so `/`, `%`, `?` and `#` stay inside the segment; a lone surrogate becomes U+FFFD.
 * Throws a RangeError for `.` and `..`: URL parsers remove those segments even when encoded as
 * `%2E`, so the request would reach another resource.
 */
export function segment(text) {
  const value = String(text);
  if (value === "." || value === "..") {
    throw new RangeError(`"${value}" cannot be sent as a URL path segment: URLs drop the segments . and ..`);
  }
  let encoded = "";
  for (const byte of utf8.encode(value)) {
    encoded += unreserved(byte) ? String.fromCharCode(byte) : `%${byte < 16 ? "0" : ""}${byte.toString(16).toUpperCase()}`;
  }
  return encoded;
}

/**
 * Text from chunks that are strings or bytes: bytes are decoded as UTF-8 across chunk borders (a
 * character split between two chunks is whole in the text), and one byte-order mark at the start of
 * the stream is dropped. A stream is fed either strings or bytes, not both.
 */
class StreamText {
  constructor() {
    this.reset();
  }

  reset() {
    // ignoreBOM: the mark is dropped below, the same way for strings and bytes.
    this.decoder = new TextDecoder("utf-8", { ignoreBOM: true });
    this.started = false;
  }

  decode(chunk) {
    let text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    return text;
  }

  /** What the decoder still held at the end of the stream (an incomplete character: U+FFFD). */
  flush() {
    const rest = this.decoder.decode();
    this.reset();
    return rest;
  }
}

/**
 * An incremental parser of a `text/event-stream`: `push` takes the next chunk and returns the
 * events it completed, each `{event, data, id, lastEventId}`:
 * - `event`: the `event:` field, or "message" when there is none (or it is empty);
 * - `data`: the `data:` lines joined by "\n" (an event without a `data:` line is not dispatched);
 * - `id`: this event's own `id:` field, or null when it has none (the contract's control events);
 * - `lastEventId`: the standard's last event ID, which carries over from earlier events.
 *
 * Lines end with CRLF, LF or CR, split anywhere between chunks; `:` lines are comments; an `id:`
 * holding NUL is ignored; `retry:` (ASCII digits only) sets `retry`, the reconnection time in ms.
 */
export class SSEParser {
  constructor() {
    this.text = new StreamText();
    /** The last event ID (as the last dispatched event set it): what a reconnect sends as `Last-Event-ID`. */
    this.lastEventId = "";
    /** The reconnection time in ms from the last valid `retry:` field, or null before one. */
    this.retry = null;
    this.clear();
  }

  /** Forgets the line and the event that are not complete: the start of a new connection's stream. */
  clear() {
    this.line = ""; // the line read so far, not ended yet
    this.skipLF = false; // the last chunk ended with CR: an LF first in the next one ends no line
    this.data = ""; // the standard's data buffer: each data line and an LF
    this.type = ""; // the standard's event type buffer
    this.eventId = null; // this event's own id field
    this.idBuffer = this.lastEventId; // the standard's last event ID buffer
  }

  /** The events that `chunk` (a string, or bytes: Uint8Array, ArrayBuffer) completes, in order. */
  push(chunk) {
    const text = this.text.decode(chunk);
    const events = [];
    let start = 0;
    if (this.skipLF && text.length > 0) {
      this.skipLF = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    // The next CR and LF from `start`, each searched again only once passed (no rescans of the chunk).
    let cr = text.indexOf("\r", start);
    let lf = text.indexOf("\n", start);
    while (cr >= 0 || lf >= 0) {
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      const line = this.line + text.slice(start, end);
      this.line = "";
      start = end + 1;
      if (end === cr) {
        if (start === text.length) this.skipLF = true;
        else if (lf === start) start += 1;
      }
      if (cr >= 0 && cr < start) cr = text.indexOf("\r", start);
      if (lf >= 0 && lf < start) lf = text.indexOf("\n", start);
      this.field(line, events);
    }
    this.line += text.slice(start);
    return events;
  }

  /**
   * The end of the stream (the connection closed): an event without its blank line is discarded, as
   * the standard says. `lastEventId` and `retry` are kept; the parser then reads a new connection's stream.
   */
  end() {
    this.text.flush();
    this.clear();
    return [];
  }

  /** Interprets one line (without its line end). */
  field(line, events) {
    if (line === "") {
      this.dispatch(events);
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":": a comment, such as the keep-alive
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + (line.charCodeAt(colon + 1) === 32 ? 2 : 1));
    if (name === "data") {
      this.data += `${value}\n`;
    } else if (name === "event") {
      this.type = value;
    } else if (name === "id") {
      if (value.includes("\0")) return;
      this.idBuffer = value;
      this.eventId = value;
    } else if (name === "retry") {
      if (/^[0-9]+$/.test(value)) this.retry = Number(value);
    }
  }

  /** A blank line: the event read so far is complete. */
  dispatch(events) {
    this.lastEventId = this.idBuffer;
    if (this.data !== "") {
      events.push({ event: this.type || "message", data: this.data.slice(0, -1), id: this.eventId, lastEventId: this.lastEventId });
    }
    this.data = "";
    this.type = "";
    this.eventId = null;
  }
}

/**
 * An incremental parser of `application/x-ndjson`: `push` takes the next chunk and returns one entry
 * per complete line, `{value}` (the line's JSON) or `{error, line}` (a line that is not JSON: the
 * SyntaxError, and the line). Lines end with LF (a CR before it is JSON whitespace); blank lines are
 * skipped; `end()` returns the entry of a last line that has no LF.
 */
export class NDJSONParser {
  constructor() {
    this.text = new StreamText();
    this.line = ""; // the line read so far, not ended yet
  }

  /** The entries of the lines that `chunk` (a string, or bytes: Uint8Array, ArrayBuffer) completes, in order. */
  push(chunk) {
    const text = this.text.decode(chunk);
    const entries = [];
    let start = 0;
    for (let end; (end = text.indexOf("\n", start)) >= 0; start = end + 1) {
      const line = this.line + text.slice(start, end);
      this.line = "";
      parseLine(line, entries);
    }
    this.line += text.slice(start);
    return entries;
  }

  /** The end of the stream: the entry of the last line if it had no LF; the parser then starts afresh. */
  end() {
    const line = this.line + this.text.flush();
    this.line = "";
    const entries = [];
    parseLine(line, entries);
    return entries;
  }
}

function parseLine(line, entries) {
  if (/^[ \t\r]*$/.test(line)) return; // nothing but JSON's whitespace
  try {
    entries.push({ value: JSON.parse(line) });
  } catch (error) {
    entries.push({ error, line });
  }
}
