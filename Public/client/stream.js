// One event stream of ObsServer with exact resume (contract section 7): EventStream, which
// /client/obs.js opens for observers and the admin stream, and the view it keeps of the values
// that change records tell. Live queries (./query.js) tap a stream for its batches.

import { ObsError, backoff, decode } from "./http.js";
import { expiredError } from "./token.js";
import { SSEParser } from "./wire.js";

/**
 * One event stream with exact resume. It tracks the last event id and drops any event at or
 * below it, reconnects after any disconnect with `Last-Event-ID` (jittered exponential backoff
 * from the server's `retry:`), handles `reset` and `synced`, and, with `?commits=1`, delivers
 * the events of one revision together as a batch when their `commit` arrives.
 *
 * It keeps a view, `"object/keyPath"` → latest value, from the records that carry one; after a
 * `reset` the rebuild records replace it at once.
 *
 * When its token ends (contract 13: `event: revoked`, or a 401 "revoked"/"expired") it closes for
 * good and says so (`onRevoked`, then `onError`), with one exception: a stream on the client's token
 * function whose token expired resumes once with a new one (a JWT's streams end at its exp).
 */
export class EventStream {
  /**
   * @param {ObsClient} client
   * @param {string} path  the stream's path
   * @param {object} [options]  `token`, `commits` (default true), `lastEventId` (where to start;
   *   default: the oldest event held), `idleTimeoutMs` (45000: silence after which the connection
   *   is taken as dead), `maxRetryMs` (30000), and the handlers: `onBatch(batch)`,
   *   `onEvent(event, data, id)`, `onChange(record, id)`, `onNotification(notification, id)`,
   *   `onReset(info)`, `onSynced(info)`, `onProgress(info)`, `onState(state)`, `onRevoked(info)`, `onError(error)`.
   */
  constructor(client, path, options = {}) {
    const { token = null, commits = true, lastEventId = null, idleTimeoutMs = 45000, maxRetryMs = 30000 } = options;
    Object.assign(this, { client, path, token, commits, lastEventId, idleTimeoutMs, maxRetryMs });
    this.handlers = options;
    /** "connecting", "live" (after `synced`), "reconnecting" or "closed". */
    this.state = "closed";
    /** `"object/keyPath"` → the latest value (ids and key paths never hold `/`). */
    this.view = new Map();
    this.keys = new Map(); // registration id → its view key, to forget it when cancelled
    this.retryMs = 1000; // until the server's `retry:` says otherwise
    this.failures = 0;
    this.pending = []; // events of the revision not committed yet
    this.rebuild = null; // records after a `reset`, until `synced`
    this.taps = new Set(); // consumers inside the client (live queries): told before the handlers
    this.sent = null; // the token the current connection was opened with
    this.stale = null; // the client's token that expired: the next connection asks for a new one
    this.ended = null; // `{reason, token}` of a `revoked` being resumed from with a new token
  }

  /**
   * Tells `consumer` of this stream: `consumer.batch(batch)` for each batch (before `onBatch`),
   * `consumer.reset(info)` at a `reset`, `consumer.error(error)` when the stream is refused for
   * good. Returns the function that stops telling it.
   */
  tap(consumer) {
    this.taps.add(consumer);
    return () => this.taps.delete(consumer);
  }

  /** Calls `name` on every tap; what one throws is reported and does not stop the others. */
  tell(name, ...args) {
    for (const consumer of [...this.taps]) {
      try {
        consumer[name]?.(...args);
      } catch (error) {
        (globalThis.reportError ?? console.error)(error);
      }
    }
  }

  /** The latest value of `object`'s `keyPath` that the stream has told. */
  value(object, keyPath) { return this.view.get(`${object}/${keyPath}`); }

  /** Opens the stream, or resumes it from the last event seen. */
  open() {
    if (this.controller || this.timer) return this;
    this.connect();
    return this;
  }

  /** Closes the stream; `open()` resumes it. */
  close() {
    clearTimeout(this.timer);
    this.timer = null;
    this.controller?.abort();
    this.controller = null;
    this.setState("closed");
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.emit("onState", state);
  }

  /** Calls a handler; what it throws is reported, never taken for a broken connection. */
  emit(name, ...args) {
    try {
      this.handlers[name]?.(...args);
    } catch (error) {
      (globalThis.reportError ?? console.error)(error);
    }
  }

  async connect() {
    this.timer = null;
    const controller = new AbortController();
    this.controller = controller;
    this.setState(this.lastEventId === null && this.state === "closed" ? "connecting" : "reconnecting");
    this.rebuild = null; // a rebuild cut short starts again: the server repeats the reset
    let wait = null;
    // An answer that does not come is a dead connection too.
    const connecting = setTimeout(() => controller.abort(), this.idleTimeoutMs);
    const stale = this.stale;
    this.stale = null;
    try {
      const bearer = this.token ?? await (stale ? this.client.renewToken(stale) : this.client.bearer());
      if (controller !== this.controller) return; // closed meanwhile
      this.sent = bearer;
      const headers = { ...this.client.headers(bearer), Accept: "text/event-stream" };
      if (this.lastEventId !== null) headers["Last-Event-ID"] = String(this.lastEventId);
      const url = this.client.base + this.path + (this.commits ? "?commits=1" : "");
      const response = await this.client.fetch(url, { headers, signal: controller.signal, cache: "no-store" });
      clearTimeout(connecting);
      if (!response.ok) await decode(response);
      this.ended = null;
      await this.read(response.body, controller);
    } catch (error) {
      if (controller !== this.controller) return; // closed meanwhile
      if (expiredError(error) && this.renews() && !stale) {
        this.stale = this.sent; // at once, with a new token (only once in a row: `stale` says it was tried)
        wait = 0;
      } else if ([400, 401, 403, 404, 410].includes(error.status)) {
        const reason = error.status === 401 ? error.details?.reason : null;
        const ended = this.ended ?? (["revoked", "expired"].includes(reason) ? { reason, token: null } : null);
        return this.fail(error, ended);
      } else {
        wait = error.retryAfter;
      }
    } finally {
      clearTimeout(connecting);
    }
    if (controller !== this.controller) return;
    // The stream ended or broke: resume from the last event seen, after a pause.
    this.controller = null;
    this.setState("reconnecting");
    if (this.state === "closed") return; // a handler closed it
    const delay = this.stale ? 0 : Math.max(wait ?? 0, backoff(this.retryMs, this.failures++, this.maxRetryMs));
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** Whether this stream sends the client's token and a function can give a new one. */
  renews() { return this.token === null && this.client.renewsToken; }

  /** Closes the stream for good: taps and `onError` hear `error`; `ended` (its token ended) goes to `onRevoked` first. */
  fail(error, ended) {
    this.close();
    this.ended = null;
    this.tell("error", error);
    if (ended) this.emit("onRevoked", ended);
    this.emit("onError", error);
  }

  /** `event: revoked` (contract 13): the token ended and the server ends the stream. */
  revoked(info) {
    if (info.reason === "expired" && this.renews()) {
      // A new token may go on where this one stopped; `ended` says why, should it fail.
      this.ended = info;
      this.stale = this.sent;
      this.controller?.abort();
      return;
    }
    this.fail(new ObsError(401, "unauthorized", `the stream's token was ${info.reason}`, info), info);
  }

  /** Reads the body event by event; a connection silent for `idleTimeoutMs` (keep-alives included) is dropped. */
  async read(body, controller) {
    const reader = body.getReader();
    const parser = new SSEParser();
    let idle;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(), this.idleTimeoutMs);
    };
    try {
      for (;;) {
        arm();
        const { value, done } = await reader.read();
        if (done || controller !== this.controller) return;
        const events = parser.push(value);
        if (parser.retry !== null) this.retryMs = Math.max(1000, parser.retry);
        for (const { event, data, id } of events) {
          // The contract's ids are integers; an event without one (reset, synced, …) has null.
          this.receive(event, /^\d+$/.test(id ?? "") ? Number(id) : null, data);
          if (controller !== this.controller) return; // a handler closed the stream
        }
      }
    } finally {
      clearTimeout(idle);
    }
  }

  /** One event off the wire: duplicates dropped, control events handled, the rest batched. */
  receive(event, id, text) {
    if (id !== null) {
      if (this.lastEventId !== null && id <= this.lastEventId) return; // already delivered
      this.lastEventId = id;
    }
    let data;
    try {
      data = JSON.parse(text);
    } catch (error) {
      (globalThis.reportError ?? console.error)(error); // not this server's: skip it, keep the stream
      return;
    }
    if (event === "reset") {
      this.pending = []; // a revision cut short: the rebuild covers it
      this.rebuild = [];
      this.tell("reset", data);
      this.emit("onReset", data);
    } else if (event === "synced") {
      // After a rebuild, the server's `lastEventId` is what it covers: resuming from there needs no
      // second rebuild (lower than ours after a reset "unknown": the server's count). Without any id
      // yet, it is where this stream starts: a resume from there cannot skip events silently.
      if (this.rebuild || this.lastEventId === null) this.lastEventId = data.lastEventId;
      if (this.rebuild) this.deliver({ revision: data.revision, events: this.rebuild, rebuild: true });
      this.rebuild = null;
      this.flush();
      if (this.state === "closed") return; // a handler closed it
      this.failures = 0;
      this.setState("live");
      this.emit("onSynced", data);
    } else if (event === "commit") {
      if (this.pending.length) this.deliver({ revision: data.revision, events: this.pending });
    } else if (event === "progress") {
      this.emit("onProgress", data);
    } else if (event === "revoked") {
      this.revoked(data);
    } else if (this.rebuild) {
      this.rebuild.push({ event, id, data });
    } else {
      // A revision whose commit was lost with its connection is whole once another one starts.
      if (data.revision !== undefined && this.pending[0]?.data.revision !== data.revision) this.flush();
      this.pending.push({ event, id, data });
      // Without commits, or for an event no commit will follow, a batch of one.
      if (!this.commits || data.revision === undefined) this.deliver({ revision: data.revision, events: this.pending });
    }
  }

  /** Hands over the events received since the last batch, as one (their revision's). */
  flush() {
    if (this.pending.length) this.deliver({ revision: this.pending[0].data.revision, events: this.pending });
  }

  /** Hands a batch over: the view first, then `onBatch`, then each event's handlers. */
  deliver(batch) {
    this.pending = [];
    if (batch.rebuild) {
      this.view = new Map();
      this.keys = new Map();
    }
    for (const { event, data } of batch.events) {
      if (event === "change") applyRecord(this, data);
      else if (event === "cancelled" && data.observation) this.view.delete(this.keys.get(data.observation));
    }
    this.tell("batch", batch);
    this.emit("onBatch", batch);
    for (const { event, id, data } of batch.events) {
      this.emit("onEvent", event, data, id);
      if (event === "change") this.emit("onChange", data, id);
      else if (event === "notification") this.emit("onNotification", data, id);
    }
  }
}

/** Updates a stream's view with one change record, as KVO describes it (6.1). */
function applyRecord(stream, record) {
  const key = `${record.object}/${record.keyPath}`;
  stream.keys.set(record.observation, key);
  if (record.prior) return;
  if (record.kind === "setting") {
    if ("new" in record) stream.view.set(key, record.new);
    return;
  }
  const array = stream.view.get(key);
  if (!Array.isArray(array) || (record.kind !== "removal" && !("new" in record))) {
    stream.view.delete(key); // the record does not say what the array holds now
    return;
  }
  const next = array.slice();
  const { indexes } = record;
  if (record.kind === "removal") for (let n = indexes.length - 1; n >= 0; n--) next.splice(indexes[n], 1);
  else if (record.kind === "insertion") indexes.forEach((index, n) => next.splice(index, 0, record.new[n]));
  else indexes.forEach((index, n) => { next[index] = record.new[n]; });
  stream.view.set(key, next);
}
