// Types for /client/query-window.js: a query's window (contract section 12) and how a `query`
// record changes it, pure code that /client/query.js and the tests use.

import type { JSONValue } from "./obs.js";

/** One object of a query's window: its id and its selected key paths' values. */
export interface QueryMember {
  id: string;
  values: Record<string, JSONValue>;
}

/** The ordered members, the number of matches, the revision of the last record applied. */
export interface QueryWindow {
  members: QueryMember[];
  total: number;
  revision: number;
}

/** A `query` event's data. */
export interface QueryRecord {
  query: string;
  revision: number;
  total: number;
  /** Positions in the window before the revision. */
  removed: { index: number; id: string; old?: Record<string, JSONValue>; moved?: true }[];
  /** Positions in the window after the revision. */
  inserted: { index: number; id: string; new?: Record<string, JSONValue>; moved?: true }[];
  /** Members that kept their place and whose selected values changed (positions after). */
  updated: { index: number; id: string; old?: Record<string, JSONValue>; new?: Record<string, JSONValue> }[];
  /** The whole window (registration with `initial`, or the rebuild after a reset). */
  initial?: true;
  by?: string;
  /** The `id` of the transaction that caused it (contract 15). */
  tx?: string;
  context?: JSONValue;
}

/** A record that does not fit the window it was applied to. */
export class QueryWindowError extends Error {}

export function emptyWindow(): QueryWindow;
/** The window from a `POST /v1/query` answer. */
export function windowFromSnapshot(answer: { objects: { id: string; values?: Record<string, JSONValue> }[]; total: number; revision: number }): QueryWindow;
/** The window after `record` (a new object; untouched members are shared); throws QueryWindowError. */
export function applyQueryRecord(window: QueryWindow, record: QueryRecord): QueryWindow;
