// ObsServer's JavaScript client: an ES module, no build step, no dependency but ./wire.js.
//
//   import { ObsClient } from "/client/obs.js";
//   const obs = new ObsClient();
//   const observer = await obs.createObserver();
//   await observer.observe("acct-1", "balance", { options: ["new", "initial"] });
//   observer.stream({ onChange: (record) => console.log(record.new) });
//
// Writes carry `Obs-Client` and an `Idempotency-Key`, so retrying one after a lost
// answer is safe (contract 7.3). Streams are read with fetch(), not EventSource, so
// that they can send headers (Authorization, Last-Event-ID, Obs-Client) and resume
// exactly where they stopped: see EventStream. The wire formats (SSE parsing, path
// segments) are ./wire.js's, shared with the dashboard.

import { SSEParser, segment as encodeSegment } from "./wire.js";

/** 64 characters of the id alphabet: a random byte picks one without bias (byte & 63). */
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/** A random string of `length` characters of the id alphabet. */
export function randomID(length = 16) {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (byte) => ALPHABET[byte & 63]).join("");
}

/** A path segment (contract 1; see wire.js); `.` and `..`, which no URL can carry, fail as an ObsError. */
function segment(text) {
  try {
    return encodeSegment(text);
  } catch (error) {
    throw new ObsError(0, "invalidName", error.message);
  }
}

/** `path` with the query of the members of `params` that are set. */
function withQuery(path, params) {
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value != null)).toString();
  return query ? `${path}?${query}` : path;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Exponential backoff from `base` ms, capped, with jitter: never sooner than asked, at most 50% later. */
const backoff = (base, attempt, cap = 30000) => Math.min(cap, base * 2 ** attempt) * (1 + Math.random() / 2);

/** An answer that was not 2xx (the contract's JSON error), or a request that never got one (status 0). */
export class ObsError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.name = "ObsError";
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** What a person reads: "404 notFound: no object 'x'". */
  toString() {
    return this.status ? `${this.status} ${this.code}: ${this.message}` : this.message;
  }
}

/** Milliseconds a 429/503 answer's `Retry-After` (seconds) asks for, or null. */
function retryAfter(response) {
  const seconds = Number(response.headers.get("Retry-After"));
  return response.headers.has("Retry-After") && Number.isFinite(seconds) ? seconds * 1000 : null;
}

/** The decoded JSON of a 2xx answer (null when empty); an ObsError for any other. */
async function decode(response) {
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    if (response.ok) throw new ObsError(response.status, "invalidResponse", "the answer is not JSON");
  }
  if (response.ok) return json;
  const error = json?.error;
  const failure = new ObsError(response.status, error?.code ?? "httpError",
    error?.message ?? (text.trim() || response.statusText), error?.details ?? {});
  failure.retryAfter = retryAfter(response);
  throw failure;
}

/** A client of one ObsServer: requests, observers and streams. It holds nothing but its settings. */
export class ObsClient {
  /**
   * @param {object} [options]
   * @param {string} [options.base]  the server's URL ("" for the page's own origin)
   * @param {string|(() => string|null)} [options.token]  the service token (or a function giving it)
   * @param {string} [options.name]  this client's name, sent as `Obs-Client` (default: random)
   * @param {number} [options.retries]  how often a request is retried after a network error or a 503
   * @param {number} [options.timeoutMs]  how long a request may wait for its answer before it is retried (30000)
   * @param {typeof fetch} [options.fetch]  the fetch to use (tests wrap it)
   */
  constructor({
    base = "", token = null, name = randomID(), retries = 3, timeoutMs = 30000, fetch = globalThis.fetch,
  } = {}) {
    this.base = base;
    this.token = token;
    this.name = name;
    this.retries = retries;
    this.timeoutMs = timeoutMs;
    this.fetch = (...args) => fetch(...args); // not `this.fetch = fetch`: window.fetch refuses another `this`
  }

  /** The headers every request and stream carries; `token` overrides the client's own. */
  headers(token) {
    const headers = { Accept: "application/json", "Obs-Client": this.name };
    const bearer = token ?? (typeof this.token === "function" ? this.token() : this.token);
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    return headers;
  }

  /**
   * One request; resolves to the answer's JSON (null for 204), rejects with an ObsError.
   * A write gets a fresh `Idempotency-Key`, kept across its retries, so retrying never
   * applies it twice; network errors and 503 are retried `retries` times (503 after its Retry-After,
   * at most 30 s).
   */
  async request(method, path, body, { token } = {}) {
    const headers = this.headers(token);
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && method !== "HEAD") headers["Idempotency-Key"] = randomID(24);
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" };
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        // A request that hangs is a lost answer too: retried (with the same key) after the timeout.
        response = await this.fetch(this.base + path, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        if (attempt >= this.retries) {
          throw new ObsError(0, "network", `the server cannot be reached (${error.message})`);
        }
        await sleep(backoff(250, attempt));
        continue;
      }
      if (response.status !== 503 || attempt >= this.retries) return decode(response);
      response.body?.cancel();
      await sleep(Math.min(30000, retryAfter(response) ?? backoff(250, attempt)));
    }
  }

  // ---- objects and values (contract 4) ----

  /** `POST /v1/objects`: body `{id?, class?, values?}`; resolves to the object. */
  createObject(body = {}) { return this.request("POST", "/v1/objects", body); }
  /** `GET /v1/objects/{id}`. */
  async getObject(id) { return this.request("GET", `/v1/objects/${segment(id)}`); }
  /** `DELETE /v1/objects/{id}`: null, or `{state: "releasePending", retainedBy}`. */
  async deleteObject(id) { return this.request("DELETE", `/v1/objects/${segment(id)}`); }
  /** `GET …/values/{keyPath}`: resolves to `{keyPath, value, revision}`. */
  async getValue(id, keyPath) { return this.request("GET", `/v1/objects/${segment(id)}/values/${segment(keyPath)}`); }

  /** setValue:forKeyPath: (`PUT …/values/{keyPath}`); resolves to `{revision}`. */
  async setValue(id, keyPath, value, { ifRevision } = {}) {
    return this.request("PUT", `/v1/objects/${segment(id)}/values/${segment(keyPath)}`, { value, ifRevision });
  }

  /** Several top-level keys under one revision (`PATCH`); resolves to `{revision}`. */
  async patch(id, values, { ifRevision } = {}) {
    return this.request("PATCH", `/v1/objects/${segment(id)}`, { values, ifRevision });
  }

  /** A to-many mutation: `{kind: "insertion"|"removal"|"replacement", indexes, values?}`. */
  async mutate(id, keyPath, mutation) {
    return this.request("POST", `/v1/objects/${segment(id)}/values/${segment(keyPath)}/mutations`, mutation);
  }

  // ---- notifications (contract 8) ----

  /** `POST /v1/notifications`; `options`: `{object, userInfo, posting, coalesce}`. */
  postNotification(name, options = {}) { return this.request("POST", "/v1/notifications", { name, ...options }); }

  // ---- observers (contract 5) and streams ----

  /**
   * Creates an observer: `{name, lease, replay, retainObserved, client}`; `client: true` names it
   * after this client (needed for the `skipOwn` option). Resolves to an Observer.
   */
  async createObserver(options = {}) {
    const body = { ...options };
    if (body.client === true) body.client = this.name;
    return new Observer(this, await this.request("POST", "/v1/observers", body));
  }

  /** An Observer for one that exists, e.g. created elsewhere and handed over with its token. */
  observer(id, token = null) { return new Observer(this, { id, token }); }

  /** The admin stream (`GET /v1/events`), opened: see EventStream for the options. */
  adminStream(options = {}) { return new EventStream(this, "/v1/events", options).open(); }
}

/** One observer (a KVOController): its registrations and its stream. Requests use its token when known. */
export class Observer {
  constructor(client, info) {
    this.client = client;
    /** What the server answered at creation (`id`, `name`, `token`, `lease`, …). */
    this.info = info;
    this.id = info.id;
    this.token = info.token ?? null;
    this.path = `/v1/observers/${segment(info.id)}`;
  }

  request(method, path, body) { return this.client.request(method, this.path + path, body, { token: this.token }); }

  /**
   * Observes one key path or several: `options` as in KVO (`new`, `old`, `initial`, `prior`, `skipOwn`),
   * `throttle` in ms, `context` any JSON. Resolves to the registrations (deduplicated ones included).
   */
  async observe(object, keyPaths, { options = [], throttle, context } = {}) {
    const body = { object, keyPaths: [].concat(keyPaths), options, throttle, context };
    return (await this.request("POST", "/observations", body)).observations;
  }

  /** unobserve:keyPath:, unobserve: (no keyPath), or unobserveAll (no arguments). */
  unobserve(object, keyPath) { return this.request("DELETE", withQuery("/observations", { object, keyPath })); }

  /** Subscribes to notifications by name, object, both, or (neither) all. */
  subscribe(name, object) { return this.request("POST", "/subscriptions", { name, object }); }

  /** removeObserver:name:object: — an absent argument matches any value. */
  unsubscribe(name, object) { return this.request("DELETE", withQuery("/subscriptions", { name, object })); }

  get() { return this.request("GET", ""); }
  keepalive() { return this.request("POST", "/keepalive"); }
  /** Deletes the observer and all it owns. */
  delete() { return this.request("DELETE", ""); }

  /** Opens the observer's event stream: see EventStream for the options and handlers. */
  stream(options = {}) {
    return new EventStream(this.client, `${this.path}/events`, { token: this.token, ...options }).open();
  }
}

/**
 * One event stream with exact resume. It tracks the last event id and drops any event at or
 * below it, reconnects after any disconnect with `Last-Event-ID` (jittered exponential backoff
 * from the server's `retry:`), handles `reset` and `synced`, and, with `?commits=1`, delivers
 * the events of one revision together as a batch when their `commit` arrives.
 *
 * It keeps a view, `"object/keyPath"` → latest value, from the records that carry one; after a
 * `reset` the rebuild records replace it at once.
 */
export class EventStream {
  /**
   * @param {ObsClient} client
   * @param {string} path  the stream's path
   * @param {object} [options]  `token`, `commits` (default true), `lastEventId` (where to start;
   *   default: the oldest event held), `idleTimeoutMs` (45000: silence after which the connection
   *   is taken as dead), `maxRetryMs` (30000), and the handlers: `onBatch(batch)`,
   *   `onEvent(event, data, id)`, `onChange(record, id)`, `onNotification(notification, id)`,
   *   `onReset(info)`, `onSynced(info)`, `onProgress(info)`, `onState(state)`, `onError(error)`.
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
    try {
      const headers = { ...this.client.headers(this.token), Accept: "text/event-stream" };
      if (this.lastEventId !== null) headers["Last-Event-ID"] = String(this.lastEventId);
      const url = this.client.base + this.path + (this.commits ? "?commits=1" : "");
      const response = await this.client.fetch(url, { headers, signal: controller.signal, cache: "no-store" });
      clearTimeout(connecting);
      if (!response.ok) await decode(response);
      await this.read(response.body, controller);
    } catch (error) {
      if (controller !== this.controller) return; // closed meanwhile
      if ([400, 401, 403, 404, 410].includes(error.status)) {
        this.close();
        this.emit("onError", error);
        return;
      }
      wait = error.retryAfter;
    } finally {
      clearTimeout(connecting);
    }
    if (controller !== this.controller) return;
    // The stream ended or broke: resume from the last event seen, after a pause.
    this.controller = null;
    this.setState("reconnecting");
    if (this.state === "closed") return; // a handler closed it
    const delay = Math.max(wait ?? 0, backoff(this.retryMs, this.failures++, this.maxRetryMs));
    this.timer = setTimeout(() => this.connect(), delay);
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
