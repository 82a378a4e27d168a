// The dashboard's own observer and its one live query (contract 12), which the Objects table
// shows. A new filter registers a new query first and deletes the old one once the new one's
// window is in, so the table never goes blank. The query lives on the observer's stream (the
// client's EventStream: resume, reset rebuild); when the server loses the observer (a restart
// without --data-dir, a Delete from the page) both are made again.

import { readable } from "./api.js";

const RETRY_MS = 2000;
/** Seconds the observer outlives a closed tab (the page also deletes it as it goes). */
const LEASE = 60;

export class ObjectsQuery {
  /**
   * @param {Api} api
   * @param {object} handlers  `onWindow(liveQuery)` after each change of the window; `onStatus({state,
   *   message?, query?})` with state "loading", "live" or "error"; `local` (default: the client's
   *   default, local when it has a context) whether the window shows the page's pending changes.
   */
  constructor(api, { onWindow, onStatus, local }) {
    this.api = api;
    this.local = local;
    this.onWindow = onWindow;
    this.onStatus = onStatus;
    this.observer = null;
    this.query = null;
    this.definition = {};
    this.generation = 0; // a newer registration (or stop()) outdates the handlers of an older one
    this.waiting = null; // the definition to apply next
    this.running = null; // the applies in progress (one at a time)
    this.applied = null; // the live query's definition, as a key
    this.stopped = true;
    this.retry = null;
    addEventListener("pagehide", () => this.leave());
  }

  /** Starts with `definition` (or the last one), making the observer when there is none. */
  start(definition = this.definition) {
    this.stopped = false;
    return this.apply(definition);
  }

  /**
   * Replaces the query by one for `definition`. Applies run one at a time, the newest waiting
   * definition next: two registrations in flight at once would share one server query (the same
   * definition is deduplicated), and the older one's close would delete it under the newer.
   * A definition equal to the live query's is left alone (a field's `change` and the form's
   * submit both ask).
   */
  apply(definition) {
    this.definition = definition;
    if (this.stopped) return Promise.resolve(); // kept for start()
    this.waiting = definition;
    this.running ??= this.drain();
    return this.running;
  }

  async drain() {
    await null; // runs after apply() has kept this promise in `running`
    try {
      while (this.waiting && !this.stopped) {
        const definition = this.waiting;
        this.waiting = null;
        if (this.query && this.applied === definitionKey(definition)) this.keep();
        else await this.replace(definition);
      }
    } finally {
      this.running = null; // in the same step as the last look at `waiting`: none is left behind
    }
  }

  async replace(definition) {
    const mine = ++this.generation;
    clearTimeout(this.retry);
    this.onStatus({ state: "loading" });
    let query;
    try {
      const observer = await this.ensureObserver();
      query = await observer.query(definition, {
        options: ["initial", "new"], // old values are not shown
        ...(this.local === undefined ? {} : { local: this.local }),
        onChange: (change) => mine === this.generation && this.onWindow(change.query),
        onCancel: (info) => this.lost(mine, `the query was removed (${info.reason})`, info.reason === "observerRemoved"),
        onError: (error) => this.lost(mine, readable(error), [404, 410].includes(error.status)),
      });
    } catch (error) {
      if (mine !== this.generation || this.stopped) return;
      // The definition's fault (400, or a 404 naming its class): said, not retried, and the last
      // good query stays live. Anything else: the observer may be gone.
      if (refusedDefinition(error)) {
        this.generation -= 1; // the live query's handlers keep working
        if (this.query) this.onWindow(this.query); // changes it had while this one loaded
        const kept = this.query ? "; the table still shows the last filter that worked" : "";
        return this.onStatus({ state: "error", message: `${readable(error)}${kept}`, invalid: true });
      }
      return this.lost(mine, readable(error), error.status === 404);
    }
    if (mine !== this.generation || this.stopped) {
      query.close().catch(() => {});
      return;
    }
    const old = this.query;
    this.query = query;
    this.applied = definitionKey(definition);
    this.onWindow(query);
    this.onStatus({ state: "live", query });
    old?.close().catch(() => {}); // the same registration (deduplicated) stays: the new one holds it
  }

  /** The live query stays (asked for again, or a refused one instead): shown and said again. */
  keep() {
    this.onWindow(this.query);
    this.onStatus({ state: "live", query: this.query });
  }

  /** The observer, created on first use under this tab's client name. */
  async ensureObserver() {
    this.observer ??= await this.api.client.createObserver({ name: this.api.client.name, lease: LEASE });
    return this.observer;
  }

  /** The query ended or could not be made: said, and made again after a pause. */
  lost(mine, message, observerGone) {
    if (mine !== this.generation || this.stopped) return;
    if (observerGone) this.forgetObserver();
    this.query = null;
    this.onStatus({ state: "error", message: `${message}; trying again…` });
    this.applied = null;
    this.retry = setTimeout(() => mine === this.generation && !this.stopped && this.apply(this.definition), RETRY_MS);
  }

  forgetObserver() {
    this.observer?.queryRouter.stream?.close();
    this.observer = null;
  }

  /** The server is back (the admin stream is live): a query stream waiting out its backoff reconnects now. */
  nudge() {
    const stream = this.observer?.queryRouter.stream;
    if (stream?.state !== "reconnecting") return;
    stream.close();
    stream.open();
  }

  /** Stops showing anything: the streams close; the observer stays until its lease ends (the token may change). */
  stop() {
    this.stopped = true;
    this.generation += 1;
    this.waiting = null;
    this.applied = null;
    clearTimeout(this.retry);
    this.query = null;
    this.forgetObserver();
  }

  /** The tab goes away: its observer (and with it the query) is deleted by a request that outlives the page. */
  leave() {
    const observer = this.observer;
    if (!observer) return;
    const { client } = this.api;
    fetch(client.base + observer.path, { method: "DELETE", keepalive: true, headers: client.headers(observer.token) })
      .catch(() => {}); // the lease ends it anyway
  }
}

/** A refused definition, as opposed to a lost observer: a 400, or a 404 for the class it names. */
export function refusedDefinition(error) {
  return error?.status === 400 || (error?.status === 404 && error.details?.class !== undefined);
}

/** Two definitions are the same query when their JSON is the same. */
export function definitionKey(definition) {
  return JSON.stringify(definition);
}
