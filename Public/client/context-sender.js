// How a context's saves reach the server (./context.js): each save is one transaction kept in the
// outbox (./outbox.js) before it is sent, sent in order, one at a time, with its `id` as its
// idempotency key; while the server cannot be reached it stays there (and shown), and is sent
// again on `online` and with backoff. A refusal for a condition (412) goes to the merge policy.

import { backoff } from "./http.js";
import { objectsOf } from "./effects.js";
import { applyEffects, pendingChanged, registryOf } from "./overlay.js";

/** How long the server remembers a transaction's id (contract 7.3 and 15): 10 minutes. */
export const IDEMPOTENCY_MEMORY_MS = 10 * 60 * 1000;
/** Answers that say the server was not reached, or may not have finished: sent again later, same id. */
const UNREACHABLE = [0, 502, 503, 504];
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/** A fresh id (24 characters of the id alphabet). */
export function freshID(length = 24) {
  return Array.from(crypto.getRandomValues(new Uint8Array(length)), (byte) => ALPHABET[byte & 63]).join("");
}

const report = (error) => (globalThis.reportError ?? console.error)(error);

/** The ids a transaction's changes are made on (written, or walked through), less those it creates. */
function objectsTouched(changes) {
  const operations = changes.map((change) => change.operation);
  const created = new Set(operations.filter((operation) => operation.op === "create").map((operation) => operation.id));
  const ids = [...objectsOf(changes.flatMap((change) => change.effects)), ...operations.map((operation) => operation.object)];
  return [...new Set(ids.filter((id) => id != null && !created.has(id)))];
}

export class ContextSender {
  constructor(context, store, { retryMs = 1000 } = {}) {
    this.context = context;
    this.store = store;
    this.retryMs = retryMs;
    /** Saved transactions, in order: queued, on their way, or answered and still shown in some window. */
    this.entries = [];
    this.seq = 0;
    this.flushing = null;
    this.again = false;
    this.failures = 0;
    this.timer = null;
    this.unreachable = null; // the error of the last attempt, while the server cannot be reached
    this.online = () => this.flush();
    globalThis.addEventListener?.("online", this.online);
  }

  /** Takes back the transactions an earlier page kept, ahead of any saved since, and sends them. */
  async restore() {
    let stored = [];
    try {
      stored = await this.store.load();
    } catch (error) {
      report(error);
    }
    if (!stored.length) return;
    this.entries.unshift(...stored.map((entry) => ({ ...entry, ready: true, answered: false, waiters: [] })));
    this.seq = Math.max(this.seq, ...stored.map((entry) => entry.seq));
    this.context.changed(false);
    this.flush();
  }

  enqueue(changes) {
    this.seq = Math.max(this.seq + 1, Date.now());
    const entry = {
      id: freshID(), seq: this.seq, changes, revisions: {}, createdAt: Date.now(), firstSentAt: null, attempts: 0,
      expectless: false, ready: false, answered: false, waiters: [],
    };
    this.entries.push(entry); // shown from now on, as it was while pending
    const done = new Promise((resolve, reject) => entry.waiters.push({ resolve, reject }));
    this.prepare(entry);
    return done;
  }

  /** The revisions to expect (once the loads under way are in), then stored, then sent. */
  async prepare(entry) {
    const ids = objectsTouched(entry.changes);
    await Promise.allSettled(ids.map((id) => this.context.loads.get(id)).filter(Boolean));
    await this.context.ready;
    entry.revisions = this.revisionsOf(ids);
    await this.persist(entry);
    entry.ready = true;
    if (this.unreachable) this.queued(entry, this.unreachable); // behind the ones waiting for the server
    this.flush();
  }

  revisionsOf(ids) {
    const revisions = {};
    for (const id of ids) {
      const revision = this.context.base.get(id)?.revision;
      if (revision != null) revisions[id] = revision;
    }
    return revisions;
  }

  async persist(entry) {
    const { id, seq, changes, revisions, createdAt, firstSentAt, attempts, expectless } = entry;
    try {
      await this.store.put({ id, seq, changes, revisions, createdAt, firstSentAt, attempts, expectless });
    } catch (error) {
      report(error);
    }
  }

  /** Sends the queue, in order, one transaction at a time. */
  flush() {
    if (this.context.closed) return Promise.resolve();
    if (this.flushing) {
      this.again = true;
      return this.flushing;
    }
    clearTimeout(this.timer);
    this.timer = null;
    this.flushing = this.drain().catch(report).finally(() => { this.flushing = null; });
    return this.flushing;
  }

  async drain() {
    for (;;) {
      this.again = false;
      const entry = this.entries.find((candidate) => !candidate.answered);
      if (!entry || !entry.ready || this.context.closed) {
        if (this.again) continue;
        return;
      }
      if (await this.send(entry) === "offline") {
        for (const waiting of this.entries) if (waiting.ready && !waiting.answered) this.queued(waiting, this.unreachable);
        this.later();
        return;
      }
    }
  }

  /** Sends the queue again after a backoff (from `retryMs`, at most 30 s) unless `online` comes first. */
  later() {
    if (this.timer || this.context.closed) return;
    const wait = backoff(this.retryMs, Math.min(this.failures++, 8));
    this.timer = setTimeout(() => { this.timer = null; this.flush(); }, wait);
  }

  async send(entry) {
    entry.attempts += 1;
    entry.firstSentAt ??= Date.now();
    await this.persist(entry);
    const expect = entry.expectless ? [] : Object.entries(entry.revisions).map(([object, ifRevision]) => ({ object, ifRevision }));
    let answer;
    try {
      answer = await this.context.client.transaction(entry.changes.map((change) => change.operation),
        { id: entry.id, expect: expect.length ? expect : undefined });
    } catch (error) {
      if (UNREACHABLE.includes(error.status)) {
        this.unreachable = error;
        return "offline";
      }
      if (error.status === 412) return this.conflict(entry, error);
      return this.refused(entry, error);
    }
    await this.answered(entry, answer);
    return "sent";
  }

  /** Kept to send later: `save()` resolves to `{id, queued: true}` and the app hears "queued" (once). */
  queued(entry, error) {
    if (entry.told) return;
    entry.told = true;
    this.settle(entry, { id: entry.id, queued: true });
    this.context.emit("queued", { id: entry.id, error });
  }

  settle(entry, value, error = null) {
    for (const { resolve, reject } of entry.waiters) error ? reject(error) : resolve(value);
    entry.waiters = [];
  }

  async answered(entry, answer) {
    const { base } = this.context;
    const revision = answer.revision;
    Object.assign(entry, { answered: true, revision });
    this.failures = 0;
    this.unreachable = null;
    this.store.remove(entry.id).catch(report);
    // The server now holds what the transaction gave: the context's objects are that, at its revision.
    const docs = applyEffects(entry.changes.flatMap((change) => change.effects), (id) => this.context.baseOf(id));
    for (const [id, doc] of docs) {
      if (doc.deleted) base.set(id, { deleted: true, revision, values: {} });
      else base.set(id, { class: doc.class ?? base.get(id)?.class ?? null, values: doc.values, partial: doc.partial, revision });
    }
    // A later transaction on the same objects expects what this one left.
    for (const later of this.entries) {
      if (later.answered || later === entry) continue;
      const chained = [...docs.keys()].filter((id) => id in later.revisions);
      for (const id of chained) later.revisions[id] = revision;
      if (chained.length) await this.persist(later);
    }
    // A window its changes do not show in gets no record of it, maybe not even an event of its revision.
    for (const query of registryOf(this.context.client).queries) {
      if (!query.hasHad(entry.id, revision) && !query.shows(entry.id)) query.txSeen.add(entry.id);
    }
    this.settle(entry, { id: entry.id, revision, results: answer.results });
    this.context.emit("saved", { id: entry.id, revision, operations: entry.changes.map((change) => change.operation) });
    this.retire();
  }

  /** Forgets the answered transactions every live window has had the records of; the windows recompute. */
  retire() {
    if (!this.entries.length) return;
    const queries = [...registryOf(this.context.client).queries];
    this.entries = this.entries.filter((entry) => {
      if (!entry.answered || !queries.every((query) => query.hasHad(entry.id, entry.revision))) return true;
      for (const query of queries) query.txSeen.delete(entry.id);
      return false;
    });
    pendingChanged(this.context.client);
  }

  /** Takes `entry` out of the queue (and the store). */
  drop(entry) {
    this.entries = this.entries.filter((candidate) => candidate !== entry);
    this.store.remove(entry.id).catch(report);
  }

  /** Puts a new transaction of `changes` where `entry` was (a fresh id: another body may not reuse one). */
  replace(entry, changes, expectless) {
    const next = {
      id: freshID(), seq: entry.seq, changes, revisions: expectless ? {} : this.revisionsOf(objectsTouched(changes)),
      createdAt: Date.now(), firstSentAt: null, attempts: 0, expectless, ready: false, answered: false, waiters: entry.waiters,
    };
    const at = this.entries.indexOf(entry);
    this.entries.splice(at < 0 ? 0 : at, at < 0 ? 0 : 1, next);
    this.store.remove(entry.id).catch(report);
    this.persist(next).then(() => { next.ready = true; this.flush(); });
    return next;
  }

  /** A 412: the server's objects are loaded, then the merge policy decides (see ./context.js). */
  async conflict(entry, error) {
    const { context } = this;
    const operations = entry.changes.map((change) => change.operation);
    const serverObjects = new Map();
    try {
      await Promise.all(objectsTouched(entry.changes).map(async (id) => {
        context.loads.delete(id); // a load from before the conflict is older than it
        try {
          serverObjects.set(id, await context.load(id));
        } catch (failure) {
          if (failure.status !== 404) throw failure;
          serverObjects.set(id, null);
        }
      }));
    } catch (failure) {
      if (!UNREACHABLE.includes(failure.status)) return this.refused(entry, failure);
      this.unreachable = failure;
      return "offline";
    }
    // Sent before, its answer lost, and the server's memory of its id gone: it may have been applied.
    const maybeApplied = entry.attempts > 1 && Date.now() - entry.firstSentAt > IDEMPOTENCY_MEMORY_MS;
    const policy = maybeApplied ? "error" : context.mergePolicy;
    const ours = new Map([...applyEffects(entry.changes.flatMap((change) => change.effects))].map(([id, doc]) => [id, doc.deleted ? null : doc.touched]));
    const conflict = {
      id: entry.id, error, policy: typeof policy === "function" ? "rebase" : policy, serverObjects, ours, operations, maybeApplied,
    };
    error.conflict = conflict;
    if (policy === "serverWins") {
      this.drop(entry);
      this.settle(entry, { id: entry.id, conflict, resolution: "serverWins" });
    } else if (policy === "clientWins") {
      this.replace(entry, entry.changes, true);
    } else if (typeof policy === "function") {
      const stash = [context.changes, context.undoStack, context.redoStack, context.group];
      Object.assign(context, { changes: [], undoStack: [], redoStack: [], group: null });
      try {
        await policy(context, serverObjects, conflict);
      } catch (failure) {
        report(failure);
      }
      const rebased = context.changes;
      [context.changes, context.undoStack, context.redoStack, context.group] = stash;
      if (rebased.length) this.replace(entry, rebased, false);
      else {
        this.drop(entry);
        this.settle(entry, { id: entry.id, conflict, resolution: "rebase" });
      }
    } else {
      this.drop(entry);
      context.changes.unshift(...entry.changes); // pending again, over the server's objects as they are now
      this.settle(entry, null, error);
    }
    context.emit("conflict", conflict);
    context.changed();
    return "resolved";
  }

  /** Refused for another reason (400, 403, 404, 409, …): the changes are pending again, the app hears "error". */
  refused(entry, error) {
    this.drop(entry);
    this.context.changes.unshift(...entry.changes);
    this.settle(entry, null, error);
    this.context.emit("error", { id: entry.id, error });
    this.context.changed();
    return "resolved";
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    globalThis.removeEventListener?.("online", this.online);
  }
}
