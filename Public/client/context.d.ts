// Types for /client/context.js: the managed object context (`obs.context(options)`).

import type {
  CreateOperation, DeleteOperation, JSONValue, MutateOperation, Mutation, ObjectInfo, ObsClient, ObsError, PatchOperation,
  SetOperation,
} from "./obs.js";
import type { Outbox } from "./outbox.js";

/** How long the server remembers a transaction's id: 10 minutes (contract 7.3, 15). */
export const IDEMPOTENCY_MEMORY_MS: number;
/** A fresh id of `length` (24) characters of the id alphabet. */
export function freshID(length?: number): string;

/** A change as the transaction operation `save()` sends. */
export type ContextOperation = SetOperation | PatchOperation | CreateOperation | DeleteOperation | MutateOperation;

/** A 412 and what the policy made of it. */
export interface ContextConflict {
  /** The refused transaction's id. */
  id: string;
  error: ObsError;
  policy: "error" | "serverWins" | "clientWins" | "rebase";
  /** The server's objects, loaded after the refusal (null: gone). */
  serverObjects: Map<string, ObjectInfo | null>;
  /** The values the transaction gave each object (null: deleted). */
  ours: Map<string, Record<string, JSONValue> | null>;
  operations: ContextOperation[];
  /** Sent before with its answer lost, and past the server's 10 minutes of memory: it may have been applied. The policy is then "error". */
  maybeApplied: boolean;
}

/** Makes the change again on the server's objects (calls `ctx.set` …); those changes are sent in its place. */
export type RebasePolicy = (ctx: ObsContext, serverObjects: Map<string, ObjectInfo | null>, conflict: ContextConflict) => void | Promise<void>;
export type MergePolicy = "error" | "serverWins" | "clientWins" | RebasePolicy;

export interface ContextOptions {
  /** What a 412 does (default "error": the changes are pending again and `save()` rejects). */
  mergePolicy?: MergePolicy;
  /** Where unsent transactions are kept (default: IndexedDB, per server and token; memory without IndexedDB). */
  outbox?: Outbox;
  /** The first wait before sending again while the server cannot be reached (1000 ms, doubling, at most 30 s). */
  retryMs?: number;
}

/** What `save()` resolves to. */
export type SaveResult =
  | { id: string; revision: number; results: Record<string, JSONValue>[] }
  /** The server cannot be reached: kept (and shown), sent once it can be. */
  | { id: string; queued: true }
  /** A conflict resolved without sending (serverWins, or a rebase that changed nothing). */
  | { id: string; conflict: ContextConflict; resolution: "serverWins" | "rebase" };

export interface ContextEvents {
  change: { pending: ContextOperation[] };
  saved: { id: string; revision: number; operations: ContextOperation[] };
  queued: { id: string; error: ObsError };
  conflict: ContextConflict;
  error: { id: string; error: ObsError };
}

export class ObsContext {
  constructor(client: ObsClient, options?: ContextOptions);
  readonly client: ObsClient;
  mergePolicy: MergePolicy;
  /** Resolves once the transactions kept by an earlier page are back (and being sent). */
  readonly ready: Promise<void>;
  readonly hasChanges: boolean;
  /** The pending changes, as the operations `save()` sends. */
  readonly pending: ContextOperation[];
  /** Saved transactions not answered yet (queued while offline, or on their way), in order. */
  readonly queued: { id: string; operations: ContextOperation[] }[];
  readonly canUndo: boolean;
  readonly canRedo: boolean;
  on<K extends keyof ContextEvents>(name: K, handler: (event: ContextEvents[K]) => void): () => void;
  /** The object's values as shown (null: deleted; undefined: never loaded). */
  get(id: string): Record<string, JSONValue> | null | undefined;
  /** One key path's value as shown (undefined: not known here). */
  value(id: string, keyPath: string): JSONValue | undefined;
  /** Whether pending or unanswered changes touch the object (and its top-level `key`). */
  isPending(id: string, key?: string): boolean;
  /** `GET /v1/objects/{id}`: its values, and the revision a save expects. */
  load(id: string): Promise<ObjectInfo>;
  set(id: string, keyPath: string, value: JSONValue): this;
  patch(id: string, values: Record<string, JSONValue>): this;
  /** Returns the new object's id (made here unless given). */
  create(object?: { id?: string; class?: string; values?: Record<string, JSONValue>; owner?: string }): string;
  delete(id: string): this;
  mutate(id: string, keyPath: string, mutation: Mutation): this;
  /** Takes back the last event-loop turn's changes; false when none is left. */
  undo(): boolean;
  redo(): boolean;
  /** Forgets every pending change (saved and queued transactions stay). */
  rollback(): void;
  /** One transaction of the pending changes (null when none), see SaveResult; rejects with the 412 under "error". */
  save(): Promise<SaveResult | null>;
  /** Sends what is queued now. */
  flush(): Promise<void>;
  close(): void;
}
