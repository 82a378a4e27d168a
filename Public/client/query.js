// Live queries (contract section 12): a query registered by an observer, whose window (the ordered
// members, each `{id, values}`, and the total) the client keeps current from the observer's event
// stream. Observer.query() in ./obs.js makes them; this file holds how.
//
// One QueryRouter per observer taps one of its streams and hands each `query` record to the live
// queries of its id. The stream's resume (Last-Event-ID, the `reset` rebuild) is the stream's own:
// a live query only applies records. A record of a revision already applied is dropped, so a
// replayed event never applies twice; an `initial` record (registration, or the rebuild after a
// `reset`) replaces the window. A record that does not fit the window (one was lost), or a query
// registered without `initial`, takes the window from `POST /v1/query` and then applies only the
// records of later revisions (records of one query come in revision order, throttled ones too).

import { ObsError, backoff } from "./http.js";
import { applyEffects, extendDefinition, overlayWindow, registryOf } from "./overlay.js";
import { QueryWindowError, applyQueryRecord, emptyWindow, windowFromSnapshot } from "./query-window.js";
import { segment } from "./wire.js";

/** What a live query asks for unless told otherwise: the initial window, then new and old values. */
export const DEFAULT_QUERY_OPTIONS = ["initial", "new", "old"];
/** A 404 for the query's class says what to do: the app defines its classes (PUT /v1/classes/{name}). */
export function missingClass(error) {
  const name = error?.status === 404 ? error.details?.class : undefined;
  if (typeof name !== "string") return error;
  error.message = `no class '${name}': define it first (PUT /v1/classes/${segment(name)} with its properties), `
    + "then query it";
  return error;
}

/** The members of a definition; the rest of the body (options, context, throttle) is the registration's. */
const DEFINITION = ["class", "where", "orderBy", "limit", "select"];
/** Records kept for registrations whose answer has not come yet, at most (the oldest go first). */
const UNCLAIMED_LIMIT = 10000;
/** Answers that a retry cannot change: the query, its observer or the access is gone for good. */
const FINAL = [400, 401, 403, 404, 410];

/** `{class, where, orderBy, limit, select}` of `definition` (the members it has). */
export function queryDefinition(definition) {
  return Object.fromEntries(DEFINITION.filter((key) => definition[key] !== undefined).map((key) => [key, definition[key]]));
}

/** Registers a query for `observer` and resolves to its LiveQuery once the first window is in. */
export async function registerQuery(observer, definition, settings = {}) {
  const { options = DEFAULT_QUERY_OPTIONS, context, throttle, initialTimeoutMs = 5000, ...rest } = settings;
  // Local: its window shows the client's contexts' pending changes (./overlay.js), so it asks for more.
  const { local = registryOf(observer.client).contexts.size > 0, ...handlers } = rest;
  const view = queryDefinition(definition);
  const router = observer.queryRouter;
  router.pending += 1;
  let answer;
  try {
    router.ensureStream(); // before the registration: its initial record is then on the stream
    const asked = local ? extendDefinition(view) : view;
    answer = await observer.request("POST", "/queries", { ...asked, options, context, throttle });
  } catch (error) {
    router.done();
    throw missingClass(error);
  }
  const query = new LiveQuery(observer, answer.query, handlers, local ? view : null);
  const sibling = router.started(query.id);
  if (sibling) query.adopt(sibling.window); // deduplicated by this very client: same records from here on
  else if (!answer.deduplicated && options.includes("initial")) query.expectInitial(initialTimeoutMs);
  else query.resync(); // no initial record will come: the window from a snapshot
  router.claim(query);
  router.done();
  await query.ready;
  return query;
}

/** The live queries of one observer and the stream that feeds them. */
export class QueryRouter {
  constructor(observer) {
    this.observer = observer;
    this.live = new Map(); // query id → Set of LiveQuery (two when this client registered it twice)
    this.pending = 0; // registrations whose answer has not come yet
    this.unclaimed = []; // {event, data, rebuild} of unknown queries while a registration is pending
    this.stream = null;
    this.untap = null;
    this.ownStream = false; // opened here, so closed here when no live query is left
  }

  /** `stream` feeds the queries unless another open stream of the observer already does. */
  offer(stream) {
    if (this.stream && this.stream !== stream && this.stream.state !== "closed") return;
    this.untap?.();
    this.stream = stream;
    this.ownStream = false;
    this.untap = stream.tap({
      batch: (batch) => this.batch(batch),
      reset: (info) => this.each((query) => query.emit("onReset", info)),
      error: (error) => this.each((query) => query.fail(error)),
    });
  }

  /** Opens a stream for the queries when none is open, resuming where the last one stopped. */
  ensureStream() {
    if (this.stream && this.stream.state !== "closed") return;
    const stream = this.observer.stream({ lastEventId: this.stream?.lastEventId ?? null });
    this.ownStream = this.stream === stream;
  }

  /** A registration answered (or failed): unknown records are kept only while another is pending. */
  done() {
    this.pending -= 1;
    if (this.pending > 0) return;
    this.unclaimed = [];
    if (this.live.size === 0 && this.ownStream) this.stream.close(); // opened for a registration that failed
  }

  /** A live query of this id whose window is known, if any. */
  started(id) {
    return [...(this.live.get(id) ?? [])].find((query) => query.state === "live") ?? null;
  }

  /** Adds `query` and hands it the records of its id that came before its registration's answer. */
  claim(query) {
    if (!this.live.has(query.id)) this.live.set(query.id, new Set());
    this.live.get(query.id).add(query);
    const mine = this.unclaimed.filter(({ data }) => data.query === query.id);
    this.unclaimed = this.unclaimed.filter(({ data }) => data.query !== query.id);
    for (const { event, data, rebuild } of mine) this.route(event, data, rebuild);
  }

  /** Removes `query`; true when it was the last one of its id here (its server side can go). */
  release(query) {
    const holders = this.live.get(query.id);
    if (!holders?.delete(query)) return false;
    if (holders.size) return false;
    this.live.delete(query.id);
    if (this.live.size === 0 && this.pending === 0 && this.ownStream) this.stream.close();
    return true;
  }

  each(work) {
    for (const holders of [...this.live.values()]) for (const query of [...holders]) work(query);
  }

  batch(batch) {
    if (batch.revision != null) this.each((query) => query.advance(batch.revision));
    const rebuilt = new Set();
    for (const { event, data } of batch.events) {
      if (event === "query" && data.initial) rebuilt.add(data.query);
      if (event !== "query" && !(event === "cancelled" && data.query)) continue;
      if (this.live.has(data.query)) this.route(event, data, batch.rebuild === true);
      else if (this.pending > 0) this.unclaimed.push({ event, data, rebuild: batch.rebuild === true });
    }
    if (this.unclaimed.length > UNCLAIMED_LIMIT) this.unclaimed.splice(0, this.unclaimed.length - UNCLAIMED_LIMIT);
    // The rebuild after a reset holds an initial record of every query the observer still has.
    if (batch.rebuild) this.each((query) => rebuilt.has(query.id) || query.missing());
    for (const context of registryOf(this.observer.client).contexts) context.windowsAdvanced();
  }

  route(event, data, rebuild) {
    for (const query of [...(this.live.get(data.query) ?? [])]) {
      if (event === "query") query.receive(data, rebuild);
      else query.cancelled(data);
    }
  }
}

/**
 * One query's window, kept current: `members` (`[{id, values}]` in the query's order), `total`
 * (all matches, not only the window's), `revision` (of the last record applied), `state`
 * ("starting", "live", "closed"). Handlers: `onChange(change)` for the first window and after each
 * record applied (and a window taken from a snapshot), `onReset(info)`, `onCancel(info)`, `onError(error)`.
 */
export class LiveQuery {
  constructor(observer, definition, handlers, view = null) {
    this.observer = observer;
    /** The registration as the server answered it (`id`, `class`, `where`, …, `createdAt`). */
    this.definition = definition;
    this.id = definition.id;
    this.handlers = handlers;
    this.window = emptyWindow();
    this.state = "starting";
    this.held = null; // records that came while a snapshot was on its way
    this.generation = 0; // a newer start (initial record, snapshot) outdates an answer on its way
    this.failures = 0;
    /** The app's definition of a local query (its window shows pending changes); null otherwise. */
    this.view = view;
    this.seen = 0; // the newest revision of the stream applied: a transaction older has all its records here
    this.txSeen = new Set(); // the transactions whose records this window has had
    this.shown = null; // the overlaid window last computed
    if (view) registryOf(observer.client).queries.add(this);
    this.ready = new Promise((resolve, reject) => Object.assign(this, { resolveReady: resolve, rejectReady: reject }));
    this.ready.catch(() => {}); // a query closed before it started is not an unhandled rejection
  }

  get members() { return this.view ? this.overlaid().members : this.window.members; }
  get total() { return this.view ? this.overlaid().total : this.window.total; }
  get revision() { return this.window.revision; }

  /** The window with the pending changes of the client's contexts that this window has not had yet. */
  overlaid() {
    if (this.shown?.window !== this.window) this.shown = this.compute();
    return this.shown;
  }

  /** The window under the contexts' changes (less those of transaction `skip`). */
  compute(skip = null) {
    const contexts = [...registryOf(this.observer.client).contexts];
    const effects = contexts.flatMap((context) => context.effectsFor(this, skip));
    const base = (id) => contexts.map((context) => context.baseOf(id)).find(Boolean) ?? null;
    this.memo ??= new WeakMap();
    const { members, total } = overlayWindow(this.window, this.view, applyEffects(effects, base), this.memo);
    return { window: this.window, members, total, text: JSON.stringify([members, total]) };
  }

  /** Whether transaction `id`'s changes show in this window: if not, no record of it is waited for. */
  shows(id) {
    return this.state === "live" && this.compute(id).text !== this.overlaid().text;
  }

  /** The contexts' pending changes changed: the app hears of it when its window did. */
  pendingChanged() {
    if (this.state !== "live") return;
    const before = this.shown?.text;
    this.shown = null;
    if (this.overlaid().text !== before) this.emit("onChange", { ...this.change(null, false), local: true });
  }

  /** The stream applied every event of `revision`. */
  advance(revision) {
    if (this.state === "live" && revision > this.seen) this.seen = revision;
  }

  /** Whether this window has had the records of transaction `id` (answered with `revision`, if known). */
  hasHad(id, revision) {
    return this.state !== "live" || this.txSeen.has(id) || (revision != null && Math.max(this.seen, this.window.revision) >= revision);
  }

  /** Unregisters the query (`DELETE`), unless another live query of this client shares it. */
  async close() {
    if (this.state === "closed") return;
    this.end();
    this.rejectReady(new ObsError(0, "closed", "the query was closed"));
    if (!this.observer.queryRouter.release(this)) return;
    try {
      await this.observer.request("DELETE", `/queries/${segment(this.id)}`);
    } catch (error) {
      if (error.status !== 404) throw error; // 404: gone already (the observer, or a cancel on its way)
    }
  }

  emit(name, ...args) {
    try {
      this.handlers[name]?.(...args);
    } catch (error) {
      (globalThis.reportError ?? console.error)(error);
    }
  }

  end() {
    registryOf(this.observer.client).queries.delete(this);
    this.state = "closed";
    this.generation += 1;
    clearTimeout(this.timer);
  }

  /** The window of a live query of the same id (this client registered it before). */
  adopt(window) {
    this.window = window;
    this.live();
    this.emit("onChange", this.change(null, true));
  }

  /** Waits for the registration's initial record; if none comes in time (it may have left a tiny replay buffer), a snapshot. */
  expectInitial(timeoutMs) {
    this.timer = setTimeout(() => this.state === "starting" && !this.held && this.resync(), timeoutMs);
  }

  /** Takes the window from `POST /v1/query`; records of later revisions that came meanwhile then apply. */
  async resync() {
    if (this.state === "closed") return;
    const mine = ++this.generation;
    this.held = [];
    if (this.state === "live") this.state = "starting";
    let snapshot;
    try {
      snapshot = await this.observer.client.request("POST", "/v1/query", queryDefinition(this.definition),
        { token: this.observer.bearer });
    } catch (error) {
      if (mine !== this.generation) return;
      if (FINAL.includes(error.status)) return this.fail(error);
      this.timer = setTimeout(() => mine === this.generation && this.resync(), backoff(500, this.failures++));
      return;
    }
    if (mine !== this.generation) return;
    const held = this.held;
    this.held = null;
    this.window = windowFromSnapshot(snapshot);
    this.live();
    this.emit("onChange", this.change(null, true));
    for (const record of held) this.receive(record, false);
  }

  /** One `query` record of this query (from a rebuild batch when `rebuild`). */
  receive(record, rebuild) {
    if (this.state === "closed") return;
    if (record.initial) {
      // A replayed registration record is older than the window; a rebuild's is always current.
      if (!rebuild && record.revision < this.window.revision && this.state === "live") return;
      this.generation += 1; // a snapshot on its way is outdated
      this.held = null;
    } else if (this.held) {
      this.held.push(record);
      return;
    } else if (this.state !== "live" || record.revision <= this.window.revision) {
      return; // before the initial record, or applied already (a replay)
    }
    try {
      this.window = applyQueryRecord(this.window, record);
      if (record.tx != null) this.txSeen.add(record.tx);
    } catch (error) {
      if (!(error instanceof QueryWindowError)) throw error;
      this.resync(); // a record was lost: start again from a snapshot
      return;
    }
    this.live();
    this.emit("onChange", this.change(record, record.initial === true));
  }

  change(record, initial) {
    return { query: this, record, initial, members: this.members, total: this.total, revision: this.revision };
  }

  live() {
    if (this.state !== "starting") return;
    this.state = "live";
    this.failures = 0;
    clearTimeout(this.timer);
    this.resolveReady(this);
  }

  /** A rebuild without this query: gone while the stream was away, unless the server still has it. */
  async missing() {
    if (this.state !== "live") return; // its registration may be newer than the rebuild
    try {
      await this.observer.request("GET", `/queries/${segment(this.id)}`);
      this.resync();
    } catch (error) {
      if (error.status === 404) this.cancelled({ query: this.id, reason: "unobserved" });
      else this.resync();
    }
  }

  /** The server removed the query (`cancelled`: unobserved, observerRemoved). */
  cancelled(info) {
    if (this.state === "closed") return;
    this.end();
    this.observer.queryRouter.release(this);
    this.rejectReady(new ObsError(0, "cancelled", `the query was removed (${info.reason})`));
    this.emit("onCancel", info);
  }

  /** The stream (or the snapshot) was refused for good: the query cannot be kept current. */
  fail(error) {
    if (this.state === "closed") return;
    this.end();
    this.observer.queryRouter.release(this);
    this.rejectReady(error);
    this.emit("onError", error);
  }
}
