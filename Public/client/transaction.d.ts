// Transactions (contract section 15): the operations, conditions and answers of `client.transaction`.
import type { JSONValue, Mutation, ObjectInfo, QueryOperator } from "./obs.js";

/** `PUT /v1/objects/{object}/values/{keyPath}` inside a transaction. */
export interface SetOperation {
  op: "set";
  object: string;
  keyPath: string;
  value: JSONValue;
  /** Compared with the object's revision before the transaction (412 revisionMismatch). */
  ifRevision?: number;
}

/** `PATCH /v1/objects/{object}`: several top-level keys. */
export interface PatchOperation {
  op: "patch";
  object: string;
  values: Record<string, JSONValue>;
  ifRevision?: number;
}

/** `POST /v1/objects`; its result is the object as created. */
export interface CreateOperation {
  op: "create";
  id?: string;
  class?: string;
  values?: Record<string, JSONValue>;
  /** The observer it lives as long as (contract 14). */
  owner?: string;
}

/** `POST …/values/{keyPath}/mutations`. */
export interface MutateOperation extends Mutation {
  op: "mutate";
  object: string;
  keyPath: string;
  ifRevision?: number;
}

/** `DELETE /v1/objects/{object}` (a retained object goes releasePending). */
export interface DeleteOperation {
  op: "delete";
  object: string;
}

/** `POST /v1/notifications`, posted now (queued postings and `coalesce` are refused in a transaction). */
export interface PostOperation {
  op: "post";
  name: string;
  object?: string;
  userInfo?: Record<string, JSONValue>;
  posting?: "now";
}

/** `POST /v1/objects/{object}/notify`: notifications for `manual` keys. */
export interface NotifyOperation {
  op: "notify";
  object: string;
  keyPaths: string[];
}

/** One operation of a transaction, told apart by `op`: the members of its single request, path parts included. */
export type TransactionOperation =
  | SetOperation | PatchOperation | CreateOperation | MutateOperation | DeleteOperation | PostOperation | NotifyOperation;

/** What an operation answers in `results`: its single request's body. */
export type TransactionResult<O extends TransactionOperation = TransactionOperation> =
  O extends CreateOperation ? ObjectInfo
    : O extends DeleteOperation ? Record<never, never> | { state: "releasePending"; retainedBy: string[] }
      : O extends PostOperation ? { delivered: number }
        : Record<never, never>;

/** A condition on one object's state before the transaction: one of `ifRevision`, `exists`, `where`. */
export type TransactionExpectation =
  | { object: string; ifRevision: number }
  /** On an object that does not exist only `exists: false` holds. */
  | { object: string; exists: boolean }
  /** Conditions of a query (contract 12) on the object's values, all of which must hold. */
  | { object: string; where: [string, QueryOperator, JSONValue][] };

export interface TransactionOptions {
  /**
   * The transaction's name (1–128 characters of the id alphabet): every record and event it causes
   * carries it as `tx`, and it is the idempotency key (10 minutes, for this credential): the same id
   * again answers what the first answered; with another body, 409 idempotencyKeyReused.
   */
  id?: string;
  /** At most 100 conditions, all of which must hold (else 412, `details.expect` its index). */
  expect?: TransactionExpectation[];
}

/** A transaction's answer: one revision for all of it, and one result per operation, in order. */
export interface TransactionAnswer<T extends readonly TransactionOperation[] = TransactionOperation[]> {
  revision: number;
  /** The transaction's `id`, when it had one. */
  id?: string;
  results: { -readonly [K in keyof T]: T[K] extends TransactionOperation ? TransactionResult<T[K]> : never };
}

/**
 * A refused transaction's error: the refused operation's status and code (400, 403, 404, 409, 412,
 * 413, 429; 503/504 as any write), `details.operation` its index, or `details.expect` the index of
 * the condition that failed (412 revisionMismatch/conditionFailed, with the object's `revision` or null).
 */
export interface TransactionErrorDetails {
  operation?: number;
  expect?: number;
  /** The object's revision before the transaction (412), null when it does not exist. */
  revision?: number | null;
  /** The `ifRevision` that did not match (412 revisionMismatch). */
  expected?: number;
  [detail: string]: JSONValue | undefined;
}
