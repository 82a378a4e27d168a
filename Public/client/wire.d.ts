// Types for /client/wire.js: the wire formats of ObsServer (event streams, contract section 7;
// URL path segments, section 1), pure code that /client/obs.js and the dashboard share.

/** A chunk of a stream: text, or UTF-8 bytes (a character may be split between two chunks). */
export type Chunk = string | Uint8Array | ArrayBuffer;

/**
 * One URL path segment for an id, a name or a key path: its UTF-8 bytes percent-encoded but for
 * `A-Z a-z 0-9 - . _ ~`. Throws a RangeError for "." and "..", which URLs drop.
 */
export function segment(text: string | number): string;

/** One event of a `text/event-stream`. */
export interface SSEEvent {
  /** The `event:` field, or "message". */
  event: string;
  /** The `data:` lines joined by "\n". */
  data: string;
  /** This event's own `id:` field, or null when it has none. */
  id: string | null;
  /** The last event ID as EventSource keeps it (carried over from earlier events). */
  lastEventId: string;
}

/** An incremental parser of Server-Sent Events, by the WHATWG rules for EventSource. */
export class SSEParser {
  constructor();
  /** The last event ID: what a reconnect sends as `Last-Event-ID`. */
  lastEventId: string;
  /** The reconnection time in ms from the last valid `retry:` field, or null before one. */
  retry: number | null;
  /** The events that `chunk` completes, in order. */
  push(chunk: Chunk): SSEEvent[];
  /** The end of a connection's stream: an incomplete event is discarded (always []). */
  end(): SSEEvent[];
}

/** One line of an NDJSON stream: its JSON value, or why it is not JSON. */
export type NDJSONEntry = { value: unknown } | { error: SyntaxError; line: string };

/** An incremental parser of `application/x-ndjson`: one JSON value per LF-ended line. */
export class NDJSONParser {
  constructor();
  /** The entries of the lines that `chunk` completes, in order; blank lines are skipped. */
  push(chunk: Chunk): NDJSONEntry[];
  /** The end of the stream: the entry of a last line without its LF, if any. */
  end(): NDJSONEntry[];
}
