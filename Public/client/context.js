// The browser's managed object context (NSManagedObjectContext for ObsServer): changes shown at
// once, in the context's objects and in every local live query window of its client, saved as one
// transaction (contract 15), kept while offline, undone per event-loop turn.
//
//   const ctx = obs.context({ mergePolicy: "serverWins" });
//   ctx.set("acct-1", "balance", 90);          // shown at once: ctx.get, live query windows
//   ctx.hasChanges; ctx.pending;               // true, [{op: "set", …}]
//   await ctx.save();                          // {id, revision} or {id, queued: true} when offline
//   ctx.undo(); ctx.redo(); ctx.rollback();
//
// A change is kept as the transaction operation it sends and as its effects (./effects.js): the
// values it gives, computed once. Saving moves the pending changes into a transaction of the
// sender (./context-sender.js), whose effects stay shown in each window until that window has had
// the records carrying the transaction's `tx` (or every event of its revision).

import { effectsOf, objectsOf } from "./effects.js";
import { applyEffects, pendingChanged, registryOf } from "./overlay.js";
import { ContextSender, IDEMPOTENCY_MEMORY_MS, freshID } from "./context-sender.js";
import { openOutbox } from "./outbox.js";
import { segment } from "./wire.js";

export { IDEMPOTENCY_MEMORY_MS, freshID };

export class ObsContext {
  /**
   * @param {import("./obs.js").ObsClient} client
   * @param {object} [options]  `mergePolicy` ("error", "serverWins", "clientWins" or a function
   *   `(ctx, serverObjects, conflict) => …` that makes the changes again), `outbox` (where unsent
   *   transactions are kept: IndexedDB per server and token by default), `retryMs` (1000: the first
   *   wait before sending again while the server cannot be reached), `name` (this context's, in events).
   */
  constructor(client, { mergePolicy = "error", outbox, retryMs = 1000 } = {}) {
    this.client = client;
    this.mergePolicy = mergePolicy;
    this.base = new Map(); // id → {class, values, revision, partial, deleted}: the server's, as last known
    this.changes = []; // pending: {operation, effects}
    this.undoStack = [];
    this.redoStack = [];
    this.group = null; // the undo group of this event-loop turn
    this.handlers = new Map();
    this.loads = new Map(); // id → the GET under way
    this.created = new Set(); // ids this context made: no revision to expect
    this.closed = false;
    const store = outbox ?? openOutbox(client.base, typeof client.token === "string" ? client.token : null);
    this.sender = new ContextSender(this, store, { retryMs });
    registryOf(client).contexts.add(this);
    /** Resolves once the transactions kept from an earlier page are back (and being sent). */
    this.ready = this.sender.restore();
  }

  // ---- events ----

  /**
   * `name`: "change" (a local change, undo, redo, rollback or a conflict changed what is shown),
   * "saved" ({id, revision, operations}), "queued" ({id, error}: kept to send once the server is
   * back), "conflict" ({id, error, policy, serverObjects, ours, operations}), "error" ({id, error}:
   * refused otherwise; the changes are pending again). Returns a function that removes the handler.
   */
  on(name, handler) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(handler);
    return () => this.handlers.get(name)?.delete(handler);
  }

  emit(name, detail) {
    for (const handler of [...(this.handlers.get(name) ?? [])]) {
      try {
        handler(detail);
      } catch (error) {
        (globalThis.reportError ?? console.error)(error);
      }
    }
  }

  // ---- what the context shows ----

  /** Whether changes are waiting for `save()`. */
  get hasChanges() { return this.changes.length > 0; }
  /** The pending changes, as the transaction operations `save()` sends. */
  get pending() { return this.changes.map(({ operation }) => operation); }
  /** The transactions saved but not answered yet (queued while offline, or on their way), in order. */
  get queued() { return this.sender.entries.filter((entry) => !entry.answered).map(({ id, changes }) => ({ id, operations: changes.map((change) => change.operation) })); }
  get canUndo() { return this.undoStack.length > 0; }
  get canRedo() { return this.redoStack.length > 0; }

  /** The objects as this context shows them: the server's as known, then unanswered transactions, then pending changes. */
  docs() {
    const changes = [...this.sender.entries.filter((entry) => !entry.answered).flatMap((entry) => entry.changes), ...this.changes];
    return applyEffects(changes.flatMap((change) => change.effects), (id) => this.baseOf(id));
  }

  /** Object `id`'s values as shown (null: deleted; undefined: not known here, never loaded). */
  get(id) {
    const doc = this.docs().get(id);
    if (doc) return doc.deleted ? null : doc.partial ? undefined : doc.values;
    const base = this.base.get(id);
    return base ? (base.deleted ? null : base.partial ? undefined : base.values) : undefined;
  }

  /** The value of `keyPath` of object `id` as shown (a pending change's first), or undefined when not known. */
  value(id, keyPath) {
    const doc = this.docs().get(id);
    if (doc?.paths.has(keyPath)) return doc.paths.get(keyPath);
    const values = doc ? (doc.deleted ? null : doc.values) : this.base.get(id)?.values;
    if (values == null) return values === null ? null : undefined;
    const [top, ...rest] = keyPath.split(".");
    if (!Object.hasOwn(values, top)) return doc?.partial === false || this.base.has(id) ? null : undefined;
    return rest.reduce((value, key) => (value == null || typeof value !== "object" ? null : value[key] ?? null), values[top]);
  }

  /** Whether pending or unanswered changes touch object `id` (and key `key`, when given: a top-level key). */
  isPending(id, key) {
    const effects = [...this.sender.entries.filter((entry) => !entry.answered).flatMap((entry) => entry.changes), ...this.changes]
      .flatMap((change) => change.effects).filter((effect) => effect.object === id);
    if (key === undefined) return effects.length > 0;
    return effects.some((effect) => effect.created || effect.deleted || effect.key === key || effect.path?.split(".")[0] === key);
  }

  /** The server's object as last known: `{class, values, partial}` (null: unknown or deleted). For the windows' overlay. */
  baseOf(id) {
    const base = this.base.get(id);
    return base && !base.deleted ? base : null;
  }

  /** The effects a live query's window shows: the transactions it has not had the records of, then the pending changes. */
  effectsFor(query, skip = null) {
    return [
      ...this.sender.entries.filter((entry) => entry.id !== skip && !query.hasHad(entry.id, entry.revision ?? null))
        .flatMap((entry) => entry.changes),
      ...this.changes,
    ].flatMap((change) => change.effects);
  }

  /** Loads object `id` from the server (`GET`): its values and the revision a save expects. Resolves to it. */
  async load(id) {
    if (!this.loads.has(id)) {
      const loading = this.client.request("GET", `/v1/objects/${segment(id)}`).then((object) => {
        this.remember(object);
        return object;
      }, (error) => {
        if (error.status === 404) this.base.set(id, { deleted: true, revision: null, values: {} });
        throw error;
      }).finally(() => this.loads.delete(id));
      this.loads.set(id, loading);
    }
    return this.loads.get(id);
  }

  /** Takes `object` (as `GET /v1/objects/{id}` answers it) as the server's state of it. */
  remember(object) {
    this.base.set(object.id, { class: object.class ?? null, values: object.values ?? {}, revision: object.revision, partial: false });
    this.changed(false);
  }

  // ---- changes ----

  /** setValue:forKeyPath: — through a reference it changes the object referred to. */
  set(id, keyPath, value) { return this.record({ op: "set", object: id, keyPath, value }); }
  /** Several top-level keys. */
  patch(id, values) { return this.record({ op: "patch", object: id, values }); }
  /** A new object (`id` made here unless given); returns its id. */
  create({ id = freshID(16), ...rest } = {}) {
    this.created.add(id);
    this.record({ op: "create", id, ...rest });
    return id;
  }
  delete(id) { return this.record({ op: "delete", object: id }); }
  /** A to-many change: `{kind: "insertion"|"removal"|"replacement", indexes, values?}`. */
  mutate(id, keyPath, mutation) { return this.record({ op: "mutate", object: id, keyPath, ...mutation }); }

  record(operation) {
    const docs = this.docs();
    const effects = effectsOf(operation, (id) => docs.get(id) ?? this.baseOf(id));
    const change = { operation, effects };
    this.changes.push(change);
    this.openGroup().push(change);
    this.redoStack = [];
    // The revision a save expects: known, or asked for now (the edit does not wait for it).
    for (const id of objectsOf(effects)) {
      if (!this.base.has(id) && !this.created.has(id) && operation.op !== "create") this.load(id).catch(() => {});
    }
    this.changed();
    return this;
  }

  /** The undo group of this event-loop turn: the changes made until the next task are undone together. */
  openGroup() {
    if (!this.group) {
      const group = [];
      this.group = group;
      this.undoStack.push(group);
      setTimeout(() => { if (this.group === group) this.group = null; }, 0);
    }
    return this.group;
  }

  /** Takes back the last group of pending changes (those of one event-loop turn). False when there is none. */
  undo() {
    this.group = null;
    const group = this.undoStack.pop();
    if (!group) return false;
    this.changes = this.changes.filter((change) => !group.includes(change));
    this.redoStack.push(group);
    this.changed();
    return true;
  }

  /** Makes the last undone group again. */
  redo() {
    this.group = null;
    const group = this.redoStack.pop();
    if (!group) return false;
    this.changes.push(...group);
    this.undoStack.push(group);
    this.changed();
    return true;
  }

  /** Forgets every pending change (saved and queued transactions stay). */
  rollback() {
    this.changes = [];
    this.undoStack = [];
    this.redoStack = [];
    this.group = null;
    this.changed();
  }

  /** What is shown changed: the windows recompute, the app hears "change" (unless `tell` is false). */
  changed(tell = true) {
    pendingChanged(this.client);
    if (tell) this.emit("change", { pending: this.pending });
  }

  // ---- saving ----

  /**
   * Sends the pending changes as one transaction: a fresh `id`, `expect` the revision of every object
   * they were made on (as this context knew it). Resolves to `{id, revision, results}` once the server
   * has it, `{id, queued: true}` when the server cannot be reached (it is kept, and sent once it can
   * be), or what the merge policy makes of a conflict (412); null when nothing is pending.
   */
  save() {
    this.group = null;
    if (!this.changes.length) return Promise.resolve(null);
    const changes = this.changes;
    this.changes = [];
    this.undoStack = [];
    this.redoStack = [];
    return this.sender.enqueue(changes);
  }

  /** Sends what is queued now (it is also sent when the page goes online, and retried with backoff). */
  flush() { return this.sender.flush(); }

  /** Called by the client's live queries after each batch of their stream: transactions their windows have had retire. */
  windowsAdvanced() { this.sender.retire(); }

  /** Stops: the windows no longer show its changes, nothing more is sent (the queue stays stored). */
  close() {
    this.closed = true;
    this.sender.stop();
    registryOf(this.client).contexts.delete(this);
    pendingChanged(this.client);
  }
}
