// ObsServer's JavaScript client: ES modules, no build step, no dependency but its own files
// (./http.js errors and retries, ./stream.js EventStream, ./query.js live queries,
// ./query-window.js and ./wire.js pure formats, ./token.js the token a function gives, ./presence.js
// who is in a room).
//
//   import { ObsClient } from "/client/obs.js";
//   const obs = new ObsClient();
//   const observer = await obs.createObserver();
//   await observer.observe("acct-1", "balance", { options: ["new", "initial"] });
//   observer.stream({ onChange: (record) => console.log(record.new) });
//   const open = await observer.query({ class: "Order", where: [["status", "==", "open"]], select: ["total"] });
//   open.members; // [{id, values: {total}}], kept current from the stream
//   const room = await obs.presence("r1", { status: "here" }); // who is in room r1 (contract 14)
//   room.members; room.total; // kept current; room.leave()
//   await obs.transaction([                          // all or nothing, one revision (contract 15)
//     { op: "set", object: "acct-1", keyPath: "balance", value: 90 },
//     { op: "set", object: "acct-2", keyPath: "balance", value: 110 },
//   ], { id: "tx-7f3a", expect: [{ object: "acct-1", where: [["balance", ">=", 10]] }] });
//
// A scoped token (contract 13) may come from a function: `new ObsClient({ token: () => fetchJWT() })`.
// Its token is held and asked for again before a JWT's exp and after a 401 "expired"; see ./token.js.
//
// Writes carry `Obs-Client` and an `Idempotency-Key`, so retrying one after a lost
// answer is safe (contract 7.3). Streams are read with fetch(), not EventSource, so
// that they can send headers (Authorization, Last-Event-ID, Obs-Client) and resume
// exactly where they stopped: see EventStream. The wire formats (SSE parsing, path
// segments) are ./wire.js's, shared with the dashboard.

import { ObsError, backoff, decode, retryAfter, sleep } from "./http.js";
import { Presence, joinPresence } from "./presence.js";
import { LiveQuery, QueryRouter, missingClass, queryDefinition, registerQuery } from "./query.js";
import { EventStream } from "./stream.js";
import { TokenSource, expiredError } from "./token.js";
import { segment as encodeSegment } from "./wire.js";

export { EventStream, LiveQuery, ObsError, Presence };
export { jwtExpiry } from "./token.js";

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

/** A client of one ObsServer: requests, observers and streams. It holds nothing but its settings. */
export class ObsClient {
  /**
   * @param {object} [options]
   * @param {string} [options.base]  the server's URL ("" for the page's own origin)
   * @param {string|(() => string|null|Promise<string|null>)} [options.token]  the token, or a function giving it:
   *   called when none is held, before a JWT's exp, and after a 401 "expired" (see ./token.js)
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
    /** The admin's scoped tokens (contract 13). */
    this.tokens = new Tokens(this);
  }

  /** The token option, as given. Setting it drops the token a former function gave. */
  get token() { return this.source.option; }

  set token(value) {
    this.source?.stop();
    this.source = new TokenSource(value);
  }

  /** Whether the token comes from a function, which can give a new one. */
  get renewsToken() { return this.source.renewable; }

  /** The client's token to send now (a function is asked when it has given none yet). */
  bearer() { return this.source.current(); }

  /**
   * Asks the token function again (e.g. after a sign-in); with `stale`, the token found expired, a
   * newer one held already is the answer. Resolves to the token.
   */
  renewToken(stale) { return this.source.renew(stale); }

  /** The headers every request and stream carries; `token` overrides the client's own (as held now). */
  headers(token) {
    const headers = { Accept: "application/json", "Obs-Client": this.name };
    const bearer = token ?? this.source.held;
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    return headers;
  }

  /**
   * One request; resolves to the answer's JSON (null for 204), rejects with an ObsError.
   * A write gets a fresh `Idempotency-Key` (or the `key` given), kept across its retries, so retrying never
   * applies it twice; network errors and 503 (and a write's 504 outcomeUnknown) are retried `retries`
   * times (after the answer's Retry-After, at most 30 s). A 401 "expired" of the client's token
   * function's token is retried once with a new one.
   */
  async request(method, path, body, { token, key: given } = {}) {
    const own = token == null; // the client's token, which a function may renew
    const key = method !== "GET" && method !== "HEAD" ? given ?? randomID(24) : null;
    const bearer = own ? await this.bearer() : token;
    try {
      return await this.send(method, path, body, bearer, key);
    } catch (error) {
      if (!own || !this.renewsToken || !expiredError(error)) throw error;
      // Refused before anything was done: once more with a new token (the same key: still one write).
      const fresh = await this.renewToken(bearer);
      if (fresh === bearer) throw error;
      return this.send(method, path, body, fresh, key);
    }
  }

  /** One request with `bearer`, retried after network errors and 503 (a write also after 504). */
  async send(method, path, body, bearer, key) {
    const headers = this.headers(bearer);
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (key) headers["Idempotency-Key"] = key;
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
      // 504 outcomeUnknown (a cluster write, contract 11): repeating it under its key answers its real outcome.
      const again = response.status === 503 || (response.status === 504 && key != null);
      if (!again || attempt >= this.retries) return decode(response);
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

  // ---- transactions (contract 15) ----

  /**
   * `POST /v1/transactions`: `operations` (each `{op, …}`: `set`, `patch`, `create`, `mutate`,
   * `delete`, `post`, `notify`, with the members of its single request) applied in order, all or
   * none, under one revision, if every condition of `expect` holds on the state before. Resolves to
   * `{revision, id?, results}` (one result per operation); rejects with an ObsError whose
   * `details.operation` (a refused operation) or `details.expect` (a condition that failed: 412) is
   * its index. `id` names the transaction (`tx` on every record and event it causes) and is its
   * idempotency key: it is sent as the `Idempotency-Key` of the request and its retries.
   */
  transaction(operations, { id, expect } = {}) {
    const body = { operations };
    if (id != null) body.id = id;
    if (expect != null) body.expect = expect;
    return this.request("POST", "/v1/transactions", body, { key: id ?? undefined });
  }

  // ---- queries (contract 12) ----

  /** `POST /v1/query`: the matches of a definition once, `{objects: [{id, values}], total, revision}`. */
  query(definition) {
    return this.request("POST", "/v1/query", queryDefinition(definition)).catch((error) => {
      throw missingClass(error);
    });
  }

  // ---- observers (contract 5) and streams ----

  /**
   * Creates an observer: `{name, lease, replay, retainObserved, client}`; `client: true` names it
   * after this client (needed for the `skipOwn` option). Resolves to an Observer.
   */
  async createObserver(options = {}) {
    const body = { ...options };
    if (body.client === true) body.client = this.name;
    // A function's token goes on being renewed, while the observer token dies with the token that made
    // the observer (13): the observer is then used with the client's token (same token id, e.g. a JWT's jti).
    return new Observer(this, await this.request("POST", "/v1/observers", body), { ownToken: !this.renewsToken });
  }

  /** An Observer for one that exists, e.g. created elsewhere and handed over with its token. */
  observer(id, token = null) { return new Observer(this, { id, token }); }

  // ---- presence (contract 14) ----

  /**
   * Joins `room` and resolves, once the member list is in, to a Presence: an observer with a short
   * lease (`lease`, 10 s) owning one object of class `className` ("Presence", which the app defines)
   * with the values `{room, user, ...info}` (`user`: this client's name), and a live query of the
   * room's members (`members`, `total`, `onChange`). Closing the tab leaves when the lease runs out; a
   * reload goes on with the same observer (sessionStorage), and never leaves. See ./presence.js.
   */
  presence(room, info = {}, options = {}) { return joinPresence(this, room, info, options); }

  /** The admin stream (`GET /v1/events`), opened: see EventStream for the options. */
  adminStream(options = {}) { return new EventStream(this, "/v1/events", options).open(); }
}

/**
 * One observer (a KVOController): its registrations and its stream. Requests use its token when known,
 * unless the client's token comes from a function (`ownToken: false`): then the client's.
 */
export class Observer {
  constructor(client, info, { ownToken = true } = {}) {
    this.client = client;
    /** What the server answered at creation (`id`, `name`, `token`, `lease`, …). */
    this.info = info;
    this.id = info.id;
    this.token = info.token ?? null;
    /** The token its requests and streams send (null: the client's). */
    this.bearer = ownToken ? this.token : null;
    this.path = `/v1/observers/${segment(info.id)}`;
  }

  request(method, path, body) { return this.client.request(method, this.path + path, body, { token: this.bearer }); }

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

  /**
   * Registers a query (contract 12) and resolves, once its first window is in, to a LiveQuery:
   * `members` (`[{id, values}]` in order), `total`, `revision`, `close()`. Settings: `options`
   * (default ["initial", "new", "old"]), `context`, `throttle`, and the handlers `onChange(change)`,
   * `onReset(info)`, `onCancel(info)`, `onError(error)`. It is kept current from the observer's
   * stream: the first one opened by `stream()`, or one opened for it (see query.js).
   */
  query(definition, settings) { return registerQuery(this, definition, settings); }

  /** `GET …/queries`: the observer's query registrations. */
  async queries() { return (await this.request("GET", "/queries")).queries; }

  /** `GET …/queries/{id}`: the definition, `ids` (the window in order) and `total`. */
  getQuery(id) { return this.request("GET", `/queries/${segment(id)}`); }

  /** The live queries' router (one per Observer object): which stream feeds them, which record goes where. */
  get queryRouter() {
    this.router ??= new QueryRouter(this);
    return this.router;
  }

  get() { return this.request("GET", ""); }
  keepalive() { return this.request("POST", "/keepalive"); }
  /** Deletes the observer and all it owns. */
  delete() { return this.request("DELETE", ""); }

  /** Opens the observer's event stream: see EventStream for the options and handlers. */
  stream(options = {}) {
    const stream = new EventStream(this.client, `${this.path}/events`, { token: this.bearer, ...options });
    this.queryRouter.offer(stream); // the first open stream also feeds the live queries
    return stream.open();
  }
}

/** The admin's scoped tokens (contract 13), as `client.tokens`. Only `create` answers with the secret. */
export class Tokens {
  constructor(client) { this.client = client; }

  /** `POST /v1/tokens` `{name?, scopes, ttl?, client?}`: the token with its secret `token` (given once). */
  create(body) { return this.client.request("POST", "/v1/tokens", body); }
  /** The tokens that work, in id order (never their secrets). */
  async list() { return (await this.client.request("GET", "/v1/tokens")).tokens; }
  async get(id) { return this.client.request("GET", `/v1/tokens/${segment(id)}`); }
  /** `PATCH`: `{scopes?, ttl?}`; the ttl counts from now, null: it never expires. */
  async change(id, changes) { return this.client.request("PATCH", `/v1/tokens/${segment(id)}`, changes); }
  /** `DELETE`: its requests answer 401 and its streams end with `revoked`; a JWT's jti works too. */
  async revoke(id) { return this.client.request("DELETE", `/v1/tokens/${segment(id)}`); }
}
