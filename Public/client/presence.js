// Presence (contract section 14): who is in a room, live. ObsClient.presence() in ./obs.js makes one;
// this file holds how. A member is an observer with a short lease plus one object it owns (class
// `Presence` by default, values `{room, user, ...info}`); the member list is a live query (./query.js)
// on that class: a join is an insertion, a leave a removal, `total` the head count.
//
// The app defines the class, with at least `room` and `user` (strings) and the keys of `info`:
//   PUT /v1/classes/Presence {"properties": {"room": {"type": "string"}, "user": {"type": "string"},
//                                            "status": {"type": "string"}}}
//
// Leaving. The observer's stream holds its lease; when the stream stops (the tab is closed, the
// network drops) the lease (10 s by default) starts, and when it runs out the server removes the
// observer and, in the same revision, the presence object: everyone sees the leave. A client that
// reconnects within the lease never leaves (its stream resumes by itself).
//
// Reload versus close. A page cannot tell a reload from a close: both fire `pagehide`. A beacon
// that removes the observer at `pagehide` would make every reload a leave and a join. So by default
// there is no beacon: at `pagehide` the observer (id, token, last event id) is kept in the tab's
// sessionStorage, which outlives a reload of the tab but not its closing. The reloaded page finds it
// and goes on with the same observer and the same presence object: it never leaves. A closed tab
// leaves when the lease runs out (lease + about 1 s). A duplicated tab copies sessionStorage while
// the original is still open (no `pagehide` mark yet), so it joins as a member of its own.
// `beacon: true` instead removes the observer at `pagehide` (`navigator.sendBeacon` to
// `POST /v1/observers/{id}/remove?access_token=<observer token>`): a close leaves at once, and a
// reload is a leave and a join.

import { ObsError } from "./http.js";

/** Answers that say the observer is gone: the member has left (the lease ran out, or it was removed). */
const GONE = [404, 410];

/** Joins `room` and resolves, once the member list is in, to a Presence (see ObsClient.presence). */
export async function joinPresence(client, room, info = {}, options = {}) {
  const presence = new Presence(client, room, info, options);
  await presence.join();
  return presence;
}

/**
 * One member of a room, and the room's members. `members` (`[{id, values}]`, ordered by user, at
 * most `limit`), `total` (the head count), `id` (this member's presence object), `observer`,
 * `state` ("joining", "joined", "left", "failed"); `update(info)`, `leave()`.
 */
export class Presence {
  constructor(client, room, info, options) {
    const {
      className = "Presence", user = client.name, lease = 10, limit = 100, select, onRemove,
      beacon = false, resume = true, rejoin = true, window: page = globalThis, storage, onChange, onError,
    } = options;
    Object.assign(this, { client, room, className, lease, onRemove, beacon, rejoin, page });
    /** The presence object's values (`update` merges into them). */
    this.values = { room, user, ...info };
    this.definition = {
      class: className, where: [["room", "==", room]], orderBy: [["user", "asc"]], limit,
      select: select ?? [...new Set(["user", ...Object.keys(info)])],
    };
    this.handlers = { onChange, onError };
    this.storage = resume ? storage ?? sessionStorageOf(page) : null;
    this.key = `obs.presence ${client.base} ${className} ${room} ${this.values.user}`;
    this.state = "joining";
    this.observer = null;
    this.token = null; // the observer's own token: the beacon's
    this.id = null; // this member's presence object
    this.stream = null;
    this.query = null;
    this.generation = 0; // a newer join (or the leave) outdates what an older one was doing
    this.onPageHide = (event) => this.pageHidden(event);
    this.onPageShow = (event) => event.persisted && this.state === "joined" && this.save(false);
    page.addEventListener?.("pagehide", this.onPageHide);
    page.addEventListener?.("pageshow", this.onPageShow);
  }

  /** The members, in the query's order: `[{id, values}]` (`id` is the member's presence object). */
  get members() { return this.query?.members ?? []; }
  /** How many are in the room (the list holds at most `limit` of them). */
  get total() { return this.query?.total ?? 0; }

  /** Joins: resumes the observer a reload left in sessionStorage, or makes a new one; then the list. */
  join() { return this.joinAs(++this.generation); }

  async joinAs(mine) {
    this.state = "joining";
    const saved = this.saved();
    let fresh = false;
    try {
      fresh = !(saved && await this.resume(mine, saved));
      if (fresh) await this.create(mine);
      this.save(false);
      const query = await this.observer.query(this.definition, {
        local: false, // a context's edits are not presence: the registration stays the one documented
        onChange: (change) => {
          if (mine !== this.generation) return;
          this.query = change.query; // the first window comes before the registration resolves
          this.emit("onChange", { presence: this, ...change });
        },
        onCancel: (info) => this.lost(mine, new ObsError(0, "cancelled", `the member list was removed (${info.reason})`),
          info.reason === "observerRemoved"),
        onError: (error) => this.lost(mine, error, GONE.includes(error.status)),
      });
      this.check(mine, () => query.end());
      this.query = query;
      this.state = "joined";
    } catch (error) {
      if (mine !== this.generation) return; // left meanwhile: what this join made is undone
      this.state = "failed";
      this.stream?.close();
      this.forget();
      this.unlisten();
      if (fresh && this.observer) this.observer.request("POST", "/remove").catch(() => {});
      throw error;
    }
  }

  /** Throws when `mine` is outdated (leave() was called meanwhile), after `undo()` (what this join made). */
  check(mine, undo = null) {
    if (mine === this.generation) return;
    undo?.();
    throw new ObsError(0, "outdated", "the join was outdated");
  }

  /** A new observer with a short lease, its stream, and the presence object it owns. */
  async create(mine) {
    const body = { lease: this.lease };
    if (this.onRemove) body.onRemove = this.onRemove;
    const observer = await this.client.createObserver(body);
    const undo = () => {
      observer.queryRouter.stream?.close();
      observer.request("POST", "/remove").catch(() => {}); // its object goes with it
    };
    this.check(mine, undo);
    Object.assign(this, { observer, token: observer.token, id: null });
    this.openStream(mine, null);
    // A failure from here on removes the observer (see joinAs): no member without its presence object.
    this.id = (await this.client.createObject({ class: this.className, values: this.values, owner: observer.id })).id;
    this.check(mine); // leave() removed the observer
  }

  /** Goes on with a saved observer if it still exists (its stream holds the lease again at once); false if not. */
  async resume(mine, saved) {
    // Observers a client with a token function makes use the client's token (see createObserver).
    const { client } = this;
    const observer = client.renewsToken ? client.observer(saved.observer) : client.observer(saved.observer, saved.token);
    try {
      await observer.get();
    } catch (error) {
      if ([401, 403, ...GONE].includes(error.status)) return false; // gone, or not this token's
      throw error;
    }
    this.check(mine, () => observer.request("POST", "/remove").catch(() => {})); // left meanwhile
    Object.assign(this, { observer, token: saved.token, id: saved.object });
    this.openStream(mine, saved.lastEventId ?? null);
    try {
      await client.patch(this.id, this.values);
    } catch (error) {
      if (!GONE.includes(error.status)) throw error;
      // Its object was deleted while it lived on: a new one, owned by it.
      this.id = (await client.createObject({ class: this.className, values: this.values, owner: observer.id })).id;
    }
    this.check(mine);
    return true;
  }

  openStream(mine, lastEventId) {
    this.stream = this.observer.stream({ lastEventId, onError: (error) => this.lost(mine, error, GONE.includes(error.status)) });
  }

  /**
   * The stream or the list ended for good. When the observer is gone (`gone`: its lease ran out while
   * the client was away longer, or it was removed) the client joins again (unless `rejoin: false`).
   */
  lost(mine, error, gone) {
    if (mine !== this.generation || this.state !== "joined") return;
    this.stream?.close();
    this.query?.end();
    this.forget();
    if (gone && this.rejoin) {
      this.join().catch((failure) => this.emit("onError", failure));
      return;
    }
    this.generation += 1;
    this.state = "failed";
    this.unlisten();
    this.emit("onError", error);
  }

  /** PATCHes this member's presence object with `info` (the other members see it in their lists). */
  async update(info) {
    Object.assign(this.values, info);
    return this.client.patch(this.id, info);
  }

  /** Leaves the room now: `POST /v1/observers/{id}/remove` (its presence object goes with it). */
  async leave() {
    if (!this.stop()) return;
    try {
      await this.observer?.request("POST", "/remove");
    } catch (error) {
      if (!GONE.includes(error.status)) throw error;
    }
  }

  /** Stops everything here (streams, handlers, the saved observer); false when it had stopped already. */
  stop() {
    if (this.state === "left") return false;
    this.state = "left";
    this.generation += 1;
    this.stream?.close();
    this.query?.end();
    this.forget();
    this.unlisten();
    return true;
  }

  unlisten() {
    this.page.removeEventListener?.("pagehide", this.onPageHide);
    this.page.removeEventListener?.("pageshow", this.onPageShow);
  }

  /** The URL the beacon posts to: the removal, with the observer's own token in the query. */
  beaconURL() {
    const token = this.token ?? this.client.source.held;
    return `${this.client.base}${this.observer.path}/remove${token ? `?access_token=${encodeURIComponent(token)}` : ""}`;
  }

  pageHidden(event) {
    if (this.state !== "joined" || !this.observer) return;
    if (this.beacon && !event.persisted) {
      const url = this.beaconURL();
      this.stop();
      this.page.navigator?.sendBeacon?.(url);
    } else {
      this.save(true); // a reload of this tab finds it and goes on with the same observer
    }
  }

  /** Keeps the observer for a reload of this tab; `hidden`: the page is going (pagehide). */
  save(hidden) {
    if (!this.storage || !this.observer) return;
    const entry = {
      observer: this.observer.id, token: this.token, object: this.id,
      lastEventId: this.stream?.lastEventId ?? null, hidden,
    };
    try {
      this.storage.setItem(this.key, JSON.stringify(entry));
    } catch {
      // storage full or refused: a reload then joins anew
    }
  }

  /** The observer a reload of this tab left (marked at its pagehide), or null. */
  saved() {
    try {
      const entry = JSON.parse(this.storage?.getItem(this.key) ?? "null");
      return entry?.hidden === true && typeof entry.observer === "string" && typeof entry.object === "string" ? entry : null;
    } catch {
      return null;
    }
  }

  forget() {
    try {
      this.storage?.removeItem(this.key);
    } catch {
      // nothing kept
    }
  }

  emit(name, ...args) {
    try {
      this.handlers[name]?.(...args);
    } catch (error) {
      (globalThis.reportError ?? console.error)(error);
    }
  }
}

/** The page's sessionStorage, or null (Node; a sandboxed frame, where reading it throws). */
function sessionStorageOf(page) {
  try {
    return page.sessionStorage ?? null;
  } catch {
    return null;
  }
}
