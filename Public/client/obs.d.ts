// Types for /client/obs.js, ObsServer's JavaScript client (the contract: API.md, sections 4–9 and 12–15).

import type { QueryMember, QueryRecord, QueryWindow } from "./query-window.js";
import type { OnRemovePatch, PresenceOptions } from "./presence.js";
import { Presence } from "./presence.js";
import type { ContextOptions } from "./context.js";
import { ObsContext } from "./context.js";
export type { QueryMember, QueryRecord, QueryWindow };
export type { OnRemovePatch, PresenceOptions };
export { Presence, ObsContext };
import type {
  SetOperation, PatchOperation, CreateOperation, MutateOperation, DeleteOperation, PostOperation, NotifyOperation, TransactionOperation, TransactionResult, TransactionExpectation, TransactionOptions, TransactionAnswer, TransactionErrorDetails,
} from "./transaction.js";
export type {
  SetOperation, PatchOperation, CreateOperation, MutateOperation, DeleteOperation, PostOperation, NotifyOperation, TransactionOperation, TransactionResult, TransactionExpectation, TransactionOptions, TransactionAnswer, TransactionErrorDetails,
};
export type { ContextConflict, ContextOperation, ContextOptions, MergePolicy, SaveResult } from "./context.js";

export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** A random string of `length` characters of the id alphabet. */
export function randomID(length?: number): string;

/** A JWT's `exp` in ms since the epoch, read without verifying it; null for a token that is no JWT. */
export function jwtExpiry(token: string | null | undefined): number | null;

/**
 * The client's token, or a function giving it (or a Promise of it). A function is called when no token
 * is held, again shortly before a JWT's `exp` (30 s before, or at 80% of a short one's life), after a
 * 401 whose `details.reason` is "expired" (the request is retried once), and by `renewToken()`.
 */
export type TokenOption = string | null | (() => string | null | undefined | Promise<string | null | undefined>);

/**
 * An answer that was not 2xx (the contract's JSON error), or a request that never got one: status 0,
 * code "network", or "invalidName" for an id or key path that no URL path can carry ("." and "..").
 */
export class ObsError extends Error {
  constructor(status: number, code: string, message: string, details?: Record<string, JSONValue>);
  status: number;
  code: string;
  details: Record<string, JSONValue>;
  /** Milliseconds a 429/503 answer's Retry-After asked for, if it had one. */
  retryAfter?: number | null;
  /** "404 notFound: …" */
  toString(): string;
}

export interface ClientOptions {
  /** The server's URL; "" (default) for the page's own origin. */
  base?: string;
  /** The token (admin, scoped, JWT), or a function that gives it: see TokenOption. */
  token?: TokenOption;
  /** Sent as `Obs-Client` on every request (default: 16 random characters of the id alphabet). */
  name?: string;
  /** Retries after a network error or a 503, and a write's 504 (default 3). Writes are retried with the same Idempotency-Key. */
  retries?: number;
  /** How long a request waits for its answer before it counts as lost and is retried (default 30000 ms). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface Revision { revision: number }

export interface ObjectInfo {
  id: string;
  class: string | null;
  revision: number;
  createdAt: string;
  values: Record<string, JSONValue>;
  retainedBy: string[];
  /** The observer it lives as long as (contract 14); absent for an object without an owner. */
  owner?: string;
}

export type KVOOption = "new" | "old" | "initial" | "prior" | "skipOwn";

export interface ObserveOptions {
  options?: KVOOption[];
  /** At most one record per registration per this many ms (contract 7.3; not with "prior"). */
  throttle?: number;
  context?: JSONValue;
}

export interface Registration {
  id: string;
  object: string;
  keyPath: string;
  options: KVOOption[];
  context: JSONValue;
  createdAt: string;
  deduplicated?: boolean;
}

export interface ObserverOptions {
  name?: string;
  lease?: number;
  replay?: number;
  retainObserved?: boolean;
  /** `true`: this client's name, so that registrations may use "skipOwn". */
  client?: string | true;
  /** Patches applied in the revision that removes the observer (at most 16; contract 14). */
  onRemove?: OnRemovePatch[];
  /** Push its events to a URL the server's --webhook-hosts allows, instead of streaming them (contract 16). */
  deliver?: { url: string; secret?: string; maxBatch?: number; timeout?: number };
}


export interface ChangeRecord {
  observation: string;
  object: string;
  keyPath: string;
  kind: "setting" | "insertion" | "removal" | "replacement";
  indexes?: number[];
  prior?: true;
  initial?: true;
  old?: JSONValue;
  new?: JSONValue;
  revision: number;
  context?: JSONValue;
  /** The `Obs-Client` of the write that caused it. */
  by?: string;
  /** The `id` of the transaction that caused it (contract 15). */
  tx?: string;
}

export interface Notification {
  subscription: string;
  name: string;
  object: string | null;
  userInfo: Record<string, JSONValue> | null;
  revision: number;
  by?: string;
  /** The `id` of the transaction that posted it. */
  tx?: string;
}

export interface StreamEvent {
  event: string;
  /** The event's id; null for the records of a rebuild. */
  id: number | null;
  data: any;
}

/** The events of one revision (after its `commit`), or the rebuild after a `reset` (at `synced`). */
export interface Batch {
  revision: number | undefined;
  events: StreamEvent[];
  /** The records that rebuild the state after a `reset` (each `"initial": true`); they replace the view. */
  rebuild?: true;
}

/** A to-many mutation as NSKeyValueChange kinds (contract 4): removal has no `values`. */
export interface Mutation {
  kind: "insertion" | "removal" | "replacement";
  indexes: number[];
  values?: JSONValue[];
}

export type StreamState = "connecting" | "live" | "reconnecting" | "closed";

export interface StreamOptions {
  /** Overrides the client's token (an Observer's stream uses the observer's). */
  token?: string | null;
  /** Open with `?commits=1` and deliver each revision as one batch (default true). */
  commits?: boolean;
  /** Where to start (default: the oldest event the server holds). */
  lastEventId?: number | null;
  /** Silence (keep-alives included) after which the connection is dropped and resumed (default 45000). */
  idleTimeoutMs?: number;
  /** The longest pause between reconnects (default 30000). */
  maxRetryMs?: number;
  onBatch?(batch: Batch): void;
  onEvent?(event: string, data: any, id: number | null): void;
  onChange?(record: ChangeRecord, id: number | null): void;
  onNotification?(notification: Notification, id: number | null): void;
  /** The resume point was gone: the next batch (`rebuild: true`) replaces the state. */
  onReset?(info: { reason: "gap" | "unknown"; oldestAvailable: number }): void;
  /** Replay (or rebuild) done: live from here on. */
  onSynced?(info: { lastEventId: number; revision: number }): void;
  onProgress?(info: { revision: number }): void;
  onState?(state: StreamState): void;
  /**
   * Its token ended (contract 13: `event: revoked`, or a 401 "revoked"/"expired"): the stream is
   * closed, does not reconnect, and `onError` follows. A stream on the client's token function whose
   * token expired first resumes with a new one; this is called only if that fails too.
   */
  onRevoked?(info: RevokedInfo): void;
  /** The stream was refused for good (400, 401, 403, 404, 410, or its token ended) and is closed. */
  onError?(error: ObsError): void;
}

/** Why a stream's token ended: `token` is the token's id (null when a 401 said so). */
export interface RevokedInfo {
  reason: "revoked" | "expired";
  token: string | null;
}

/** A consumer inside the client (live queries) that a stream tells before its handlers. */
export interface StreamTap {
  batch?(batch: Batch): void;
  reset?(info: { reason: string; oldestAvailable: number }): void;
  error?(error: ObsError): void;
}

export class EventStream {
  constructor(client: ObsClient, path: string, options?: StreamOptions);
  /** Tells `consumer` of every batch, reset and final error; returns the function that stops it. */
  tap(consumer: StreamTap): () => void;
  readonly state: StreamState;
  /** The id of the last event received, which a resume continues after (null before the first);
   *  events of a revision whose commit has not come yet may be received but not yet delivered. */
  readonly lastEventId: number | null;
  /** `"object/keyPath"` → the latest value the stream has told. */
  readonly view: Map<string, JSONValue>;
  /** The server's `retry:` (ms): the base of the reconnect backoff. */
  readonly retryMs: number;
  value(object: string, keyPath: string): JSONValue | undefined;
  /** Opens the stream, or resumes it from the last event seen. */
  open(): this;
  /** Closes the stream; `open()` resumes it. */
  close(): void;
}

export type QueryOperator = "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "prefix" | "exists";

/** What a query matches and how its window is ordered and cut (contract 12). */
export interface QueryDefinition {
  /** Only objects of this class (absent: every object). */
  class?: string;
  /** At most 16 conditions, all must hold: [keyPath, operator, operand]. */
  where?: [string, QueryOperator, JSONValue][];
  /** At most 3: [keyPath, "asc" | "desc"]; the id ascending always breaks ties. */
  orderBy?: [string, "asc" | "desc"][];
  /** The window's size (1–10000, default 1000). */
  limit?: number;
  /** The key paths each member carries in `values` (at most 32). */
  select?: string[];
}

/** A query registration as the server answers it. */
export interface QueryRegistration extends QueryDefinition {
  id: string;
  options: ("initial" | "new" | "old")[];
  context: JSONValue;
  createdAt: string;
  deduplicated?: boolean;
}

/** What `onChange` is told after each record applied (or a window taken from a snapshot: `record` null). */
export interface QueryChange {
  query: LiveQuery;
  record: QueryRecord | null;
  /** The window was replaced (the initial record, a rebuild after a reset, or a snapshot). */
  initial: boolean;
  members: QueryMember[];
  total: number;
  revision: number;
  /** A context's change (not a record) changed the window. */
  local?: true;
}

export interface QuerySettings {
  /** Default ["initial", "new", "old"]. Without "initial" the window is taken from `POST /v1/query`. */
  options?: ("initial" | "new" | "old")[];
  context?: JSONValue;
  /** At most one record per this many ms (contract 7.3). */
  throttle?: number;
  /** How long to wait for the registration's initial record before taking a snapshot instead (5000 ms). */
  initialTimeoutMs?: number;
  onChange?(change: QueryChange): void;
  /** The stream's resume point was gone: the rebuild replaces the window (an `onChange` with `initial`). */
  onReset?(info: { reason: string; oldestAvailable: number }): void;
  /** The server removed the query (`unobserved`, `observerRemoved`); it is closed. */
  onCancel?(info: { query: string; reason: string; revision?: number }): void;
  /** The stream or a snapshot was refused for good (400, 401, 403, 404, 410); it is closed. */
  onError?(error: ObsError): void;
  /**
   * Shows the client's contexts' pending changes (default: whether the client has a context when it
   * registers): it then also selects what its where and orderBy read, and 25 members more.
   */
  local?: boolean;
}

/** A query's window kept current from the observer's stream. */
export class LiveQuery {
  readonly id: string;
  readonly definition: QueryRegistration;
  readonly observer: Observer;
  /** The window: members in the query's order, each with its selected values. */
  readonly members: QueryMember[];
  /** How many objects match (the window holds at most `limit` of them). */
  readonly total: number;
  /** The revision of the last record applied. */
  readonly revision: number;
  readonly state: "starting" | "live" | "closed";
  /** Unregisters it (`DELETE`), unless another LiveQuery of this client shares the registration. */
  close(): Promise<void>;
}

export class Observer {
  /** `ownToken: false`: requests and streams send the client's token, not the observer's. */
  constructor(client: ObsClient, info: { id: string; token?: string | null }, options?: { ownToken?: boolean });
  readonly client: ObsClient;
  readonly id: string;
  /** The observer's own token (section 9), as the server gave it. */
  readonly token: string | null;
  /**
   * The token its requests and streams send; null: the client's. Observers a client with a token
   * function creates use the client's, which is renewed (the observer token dies with the token that
   * made the observer); a new token must then have the same id (a JWT's `jti`) to go on using them.
   */
  readonly bearer: string | null;
  /** What the server answered at creation. */
  readonly info: Record<string, JSONValue>;
  request(method: string, path: string, body?: unknown): Promise<any>;
  observe(object: string, keyPaths: string | string[], options?: ObserveOptions): Promise<Registration[]>;
  unobserve(object?: string, keyPath?: string): Promise<null>;
  subscribe(name?: string, object?: string): Promise<{
    id: string; name: string | null; object: string | null; createdAt: string; deduplicated?: boolean;
  }>;
  unsubscribe(name?: string, object?: string): Promise<null>;
  /**
   * Registers a query and resolves, once its first window is in, to a LiveQuery kept current from
   * the observer's first open stream (or one opened for it, closed with its last query).
   */
  query(definition: QueryDefinition, settings?: QuerySettings): Promise<LiveQuery>;
  queries(): Promise<QueryRegistration[]>;
  getQuery(id: string): Promise<QueryRegistration & { ids: string[]; total: number }>;
  get(): Promise<Record<string, JSONValue>>;
  keepalive(): Promise<{ expiresAt: string | null }>;
  delete(): Promise<null>;
  stream(options?: StreamOptions): EventStream;
}

export class ObsClient {
  constructor(options?: ClientOptions);
  base: string;
  /** The token option as given; setting it drops the token a former function gave. */
  token: TokenOption;
  name: string;
  retries: number;
  timeoutMs: number;
  fetch: typeof fetch;
  /** The admin's scoped tokens (contract 13). */
  readonly tokens: Tokens;
  /** Whether the token comes from a function, which can give a new one. */
  readonly renewsToken: boolean;
  /** The client's token to send now (a function is asked when it has given none yet). */
  bearer(): Promise<string | null>;
  /** Asks the token function again; with `stale`, a newer token held already is the answer. */
  renewToken(stale?: string | null): Promise<string | null>;
  /** The headers of a request: `token`, or the client's token as held now. */
  headers(token?: string | null): Record<string, string>;
  /** One request: the answer's JSON (null for 204), or a rejected ObsError. */
  request(method: string, path: string, body?: unknown, options?: { token?: string | null }): Promise<any>;
  /** `owner`: an observer the object lives as long as (contract 14). */
  createObject(body?: { id?: string; class?: string; values?: Record<string, JSONValue>; owner?: string }): Promise<ObjectInfo>;
  getObject(id: string): Promise<ObjectInfo>;
  deleteObject(id: string): Promise<null | { state: "releasePending"; retainedBy: string[] }>;
  getValue(id: string, keyPath: string): Promise<{ keyPath: string; value: JSONValue; revision: number }>;
  setValue(id: string, keyPath: string, value: JSONValue, options?: { ifRevision?: number }): Promise<Revision>;
  patch(id: string, values: Record<string, JSONValue>, options?: { ifRevision?: number }): Promise<Revision>;
  mutate(id: string, keyPath: string, mutation: Mutation): Promise<Revision>;
  postNotification(name: string, options?: {
    object?: string; userInfo?: Record<string, JSONValue>; posting?: "now" | "asap" | "idle"; coalesce?: ("name" | "object")[];
  }): Promise<{ revision: number; delivered: number } | { queued: true; coalesced: number }>;
  /**
   * `POST /v1/transactions` (contract 15): the operations in order, all or none, under one revision,
   * if every `expect` holds. A refusal rejects with an ObsError whose `details` are
   * TransactionErrorDetails. `id` is sent as the Idempotency-Key, so a retry is applied once.
   */
  transaction<T extends readonly TransactionOperation[] | []>(operations: T, options?: TransactionOptions):
    Promise<TransactionAnswer<T>>;
  /** `POST /v1/query`: the matches once, registering nothing. */
  query(definition: QueryDefinition): Promise<{ objects: QueryMember[]; total: number; revision: number }>;
  createObserver(options?: ObserverOptions): Promise<Observer>;
  observer(id: string, token?: string | null): Observer;
  adminStream(options?: StreamOptions): EventStream;
  /**
   * Joins `room` (contract 14) and resolves, once the member list is in, to a Presence: an observer
   * with a short lease owning one object `{room, user, ...info}` of class `className`, and a live
   * query of the room's members. Rejects (and leaves nothing behind) when a step is refused, e.g. a
   * class that does not exist (404) or lacks a key of `info` (400).
   */
  presence(room: string, info?: Record<string, JSONValue>, options?: PresenceOptions): Promise<Presence>;
  /** A managed object context over this client's objects and live query windows (see ObsContext). */
  context(options?: ContextOptions): ObsContext;
}

/** One scope of a scoped token (contract 13): the actions it allows on what it matches. */
export interface TokenScope {
  allow: ("read" | "observe" | "write" | "create" | "delete" | "post" | "subscribe")[];
  /** The object's class (exact). */
  class?: string;
  /** The object id; `*` matches any run of characters. */
  ids?: string;
  /** Objects owned by observers made with this token (section 14). */
  owned?: true;
  /** Notification names; `*` as for ids. */
  names?: string;
}

/** A scoped token as the server shows it (never its secret). */
export interface TokenInfo {
  id: string;
  name: string | null;
  scopes: TokenScope[];
  expiresAt: string | null;
  client: string | null;
  createdAt: string;
  /** How many observers it made that still exist. */
  observers: number;
}

/** `client.tokens`: the admin's scoped tokens. */
export class Tokens {
  constructor(client: ObsClient);
  /** `POST /v1/tokens`: the new token with its secret `token`, which is never shown again. */
  create(body: { name?: string; scopes: TokenScope[]; ttl?: number; client?: string }): Promise<TokenInfo & { token: string }>;
  list(): Promise<TokenInfo[]>;
  get(id: string): Promise<TokenInfo>;
  /** `PATCH`: the ttl counts from now; null: it never expires. Open streams go on. */
  change(id: string, changes: { scopes?: TokenScope[]; ttl?: number | null }): Promise<TokenInfo>;
  /** `DELETE`: revoked (a JWT's jti too); its streams end with `revoked`. */
  revoke(id: string): Promise<null>;
}
