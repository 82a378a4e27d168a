// Types for /client/outbox.js: where a context keeps the transactions it has not sent.

import type { JSONValue } from "./obs.js";

/** One kept transaction (plain JSON). */
export interface OutboxEntry {
  id: string;
  seq: number;
  changes: { operation: Record<string, JSONValue>; effects: Record<string, JSONValue>[] }[];
  /** object id → the revision its expect holds. */
  revisions: Record<string, number>;
  createdAt: number;
  firstSentAt: number | null;
  attempts: number;
  expectless: boolean;
}

export interface Outbox {
  /** The entries, in order. */
  load(): Promise<OutboxEntry[]>;
  put(entry: OutboxEntry): Promise<unknown>;
  remove(id: string): Promise<unknown>;
}

/** The queue's name: the server's URL and a digest of the token. */
export function queueName(base: string, token: string | null): string;
export class MemoryOutbox implements Outbox {
  load(): Promise<OutboxEntry[]>;
  put(entry: OutboxEntry): Promise<void>;
  remove(id: string): Promise<void>;
}
/** IndexedDB database "obs-client", store "outbox". */
export class IndexedDBOutbox implements Outbox {
  constructor(queue: string, indexedDB?: IDBFactory);
  load(): Promise<OutboxEntry[]>;
  put(entry: OutboxEntry): Promise<unknown>;
  remove(id: string): Promise<unknown>;
}
export function openOutbox(base: string, token: string | null, indexedDB?: IDBFactory): Outbox;
