// Presence in Public/client/obs.js (ObsClient.presence, ./presence.js; contract 14) against a fake
// server: joining makes an observer with a short lease, its owned presence object and a live query
// of the room; the list follows the query's records; leave() posts the removal; pagehide keeps the
// observer for a reload of the tab (and with `beacon: true` sends the removal as a beacon instead); a
// reload goes on with the same observer; an observer gone for good is joined again.

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { ObsClient } from "../../Public/client/obs.js";
import { FakeServer, notFound } from "./fake-server.mjs";

/** A page: an EventTarget with navigator.sendBeacon and a sessionStorage (kept across "reloads"). */
function fakePage(storage = new Map()) {
  const page = new EventTarget();
  page.beacons = [];
  page.navigator = { sendBeacon: (url, body) => page.beacons.push({ url, body }) && true };
  page.sessionStorage = {
    getItem: (key) => storage.get(key) ?? null,
    setItem: (key, value) => storage.set(key, String(value)),
    removeItem: (key) => storage.delete(key),
  };
  page.storage = storage;
  page.hide = (persisted = false) => page.dispatchEvent(Object.assign(new Event("pagehide"), { persisted }));
  return page;
}

const presences = [];
afterEach(() => {
  for (const presence of presences.splice(0)) presence.stop();
});

async function until(predicate, what = "the condition", ms = 2000) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const DEFINITION = { class: "Presence", where: [["room", "==", "r1"]], orderBy: [["user", "asc"]], limit: 100, select: ["user", "status"] };
const entry = (index, id, user, status = "here") => ({ index, id, new: { user, status } });
const initial = (query, revision, total, ...inserted) => ({ query, revision, total, initial: true, removed: [], inserted, updated: [] });
const users = (presence) => presence.members.map(({ id, values }) => `${id}=${values.user}`);

/** The routes of observer `obs` (token `tok`), its presence object `pre`, and its query `qry`. */
function routes(obs, pre, qry = `qry_${obs}`) {
  return {
    [`POST /v1/observers/${obs}/queries`]: async (body) => [201, { query: { id: qry, ...body, createdAt: "2026-12-01T00:00:00Z" } }],
    [`POST /v1/observers/${obs}/remove`]: async () => [204, null],
    [`GET /v1/observers/${obs}`]: async () => [200, { id: obs, lease: 10 }],
    [`PATCH /v1/objects/${pre}`]: async () => [200, { revision: 30 }],
  };
}

/** A server on which each POST /v1/observers makes the next of `observers` (`[id, token]`), and each POST /v1/objects `pre_n`. */
function setup(observers = [["obs_1", "tok_1"]], extra = {}) {
  let made = 0;
  let objects = 0;
  const server = new FakeServer({
    "POST /v1/observers": async (body) => {
      const [id, token] = observers[made++];
      return [201, { id, token, lease: body.lease }];
    },
    "POST /v1/objects": async (body) => [201, { id: `pre_${++objects}`, class: body.class, values: body.values, owner: body.owner }],
    ...Object.assign({}, ...observers.map(([id], n) => routes(id, `pre_${n + 1}`))),
    ...extra,
  });
  const client = new ObsClient({ fetch: server.fetch, name: "alice", token: "app-token" });
  return { server, client };
}

/** Joins r1 on `client` (page `page`), answering the registration with the initial record of `members`. */
async function join(server, client, page, options = {}, ...members) {
  const pending = client.presence("r1", { status: "here" }, { window: page, ...options });
  const streams = server.streams.length;
  await until(() => server.streams.length > streams && server.posts(`${server.streams.at(-1).path.slice(0, -7)}/queries`).length,
    "the stream and the registration");
  const observer = server.streams.at(-1).path.split("/")[3];
  server.revision(20, 1, ["query", initial(`qry_${observer}`, 20, members.length, ...members)]);
  const presence = await pending;
  presences.push(presence);
  return presence;
}

test("presence makes an observer with a short lease, its owned presence object and a live query of the room", async () => {
  const { server, client } = setup();
  const page = fakePage();
  const changes = [];
  const onRemove = [{ object: "room-r1", values: { lastSeen: "gone" } }];
  const presence = await join(server, client, page, { onRemove, onChange: (change) => changes.push(change.total) },
    entry(0, "pre_1", "alice"), entry(1, "pre_9", "bob"));

  const [observer] = server.posts("/v1/observers");
  assert.deepEqual(observer.body, { lease: 10, onRemove });
  assert.equal(observer.headers.Authorization, "Bearer app-token");
  const [object] = server.posts("/v1/objects");
  assert.deepEqual(object.body, { class: "Presence", values: { room: "r1", user: "alice", status: "here" }, owner: "obs_1" });
  assert.equal(server.streams[0].path, "/v1/observers/obs_1/events");
  assert.equal(server.streams[0].headers.Authorization, "Bearer tok_1");
  const [query] = server.posts("/v1/observers/obs_1/queries");
  assert.deepEqual(query.body, { ...DEFINITION, options: ["initial", "new", "old"] });
  // The order: the observer, its stream (which holds the lease), its object, then the query.
  assert.ok(server.calls.indexOf(object) > server.calls.findIndex((call) => call.path.endsWith("/events")));

  assert.equal(presence.state, "joined");
  assert.deepEqual([presence.id, presence.observer.id, presence.total], ["pre_1", "obs_1", 2]);
  assert.deepEqual(users(presence), ["pre_1=alice", "pre_9=bob"]);
  assert.deepEqual(changes, [2]);
});

test("the member list follows the query's records: joins, leaves and updates", async () => {
  const { server, client } = setup();
  const seen = [];
  const presence = await join(server, client, fakePage(), { onChange: ({ presence: p, total }) => seen.push([total, users(p)]) },
    entry(0, "pre_1", "alice"));
  server.revision(21, 2, ["query", { query: "qry_obs_1", total: 2, removed: [], inserted: [entry(1, "pre_7", "carol")], updated: [] }]);
  await until(() => presence.total === 2, "carol's join");
  server.revision(22, 3, ["query", {
    query: "qry_obs_1", total: 3, removed: [], inserted: [entry(1, "pre_8", "bob")],
    updated: [{ index: 2, id: "pre_7", new: { status: "away" } }],
  }]);
  await until(() => presence.total === 3, "bob's join");
  assert.deepEqual(presence.members.map((m) => m.values.status), ["here", "here", "away"]);
  server.revision(23, 4, ["query", { query: "qry_obs_1", total: 2, removed: [{ index: 1, id: "pre_8" }], inserted: [], updated: [] }]);
  await until(() => presence.total === 2, "bob's leave");
  assert.deepEqual(seen.map(([total, list]) => [total, list.length]), [[1, 1], [2, 2], [3, 3], [2, 2]]);
  assert.deepEqual(users(presence), ["pre_1=alice", "pre_7=carol"]);
});

test("update() patches the member's own presence object; leave() posts the removal and stops", async () => {
  const { server, client } = setup();
  const page = fakePage();
  const presence = await join(server, client, page, {}, entry(0, "pre_1", "alice"));
  await presence.update({ status: "typing" });
  const patch = server.calls.find((call) => call.method === "PATCH");
  assert.equal(patch.path, "/v1/objects/pre_1");
  assert.deepEqual(patch.body, { values: { status: "typing" } });
  assert.equal(presence.values.status, "typing");

  await presence.leave();
  const [remove] = server.posts("/v1/observers/obs_1/remove");
  assert.equal(remove.headers.Authorization, "Bearer tok_1"); // the observer's own token may remove it
  assert.equal(presence.state, "left");
  assert.ok(server.streams[0].signal.aborted, "the stream is closed");
  assert.equal(page.storage.size, 0);
  page.hide();
  assert.deepEqual(page.beacons, []);
  await presence.leave(); // once only
  assert.equal(server.posts("/v1/observers/obs_1/remove").length, 1);
});

test("by default pagehide sends no beacon: the observer is kept for a reload, which resumes it", async () => {
  const { server, client } = setup([["obs_1", "tok_1"], ["obs_2", "tok_2"]]);
  const page = fakePage();
  await join(server, client, page, {}, entry(0, "pre_1", "alice"));
  page.hide();
  assert.deepEqual(page.beacons, []);
  const [key] = page.storage.keys();
  const saved = JSON.parse(page.storage.get(key));
  assert.deepEqual(saved, { observer: "obs_1", token: "tok_1", object: "pre_1", lastEventId: 1, hidden: true });

  // The reloaded page (same tab: same sessionStorage) goes on with obs_1 and pre_1, from event 1. Its
  // query is obs_1's already (deduplicated): the window comes from a snapshot.
  server.handlers["POST /v1/observers/obs_1/queries"] = async (body) => [200, { query: { id: "qry_obs_1", ...body }, deduplicated: true }];
  server.handlers["POST /v1/query"] = async () => [200, { objects: [{ id: "pre_1", values: { user: "alice" } }], total: 1, revision: 25 }];
  const reloaded = fakePage(page.storage);
  const presence = await join(server, client, reloaded, {});
  assert.deepEqual([users(presence), presence.total], [["pre_1=alice"], 1]);
  assert.equal(server.posts("/v1/observers").length, 1, "no second observer");
  assert.equal(server.posts("/v1/objects").length, 1, "no second presence object");
  assert.deepEqual([presence.observer.id, presence.id], ["obs_1", "pre_1"]);
  assert.ok(server.calls.some((call) => call.method === "GET" && call.path === "/v1/observers/obs_1"));
  const patch = server.calls.find((call) => call.method === "PATCH");
  assert.deepEqual([patch.path, patch.body.values], ["/v1/objects/pre_1", { room: "r1", user: "alice", status: "here" }]);
  assert.equal(server.streams[1].headers["Last-Event-ID"], "1");
  assert.equal(server.streams[1].headers.Authorization, "Bearer tok_1");
  assert.equal(JSON.parse(reloaded.storage.get(key)).hidden, false);
});

test("a saved observer that is gone, or not marked by a pagehide (a duplicated tab), is not resumed", async () => {
  const { server, client } = setup([["obs_1", "tok_1"], ["obs_2", "tok_2"], ["obs_3", "tok_3"]],
    { "GET /v1/observers/obs_1": async () => notFound("no observer obs_1") });
  const page = fakePage();
  await join(server, client, page, {}, entry(0, "pre_1", "alice"));
  const duplicate = fakePage(new Map(page.storage)); // a copy while the first tab is open: not hidden
  const second = await join(server, client, duplicate, {}, entry(0, "pre_1", "alice"), entry(1, "pre_2", "alice"));
  assert.equal(second.observer.id, "obs_2");

  page.hide(); // obs_1 saved, but its lease ran out before the reload came
  const third = await join(server, client, fakePage(page.storage), {}, entry(0, "pre_3", "alice"));
  assert.equal(third.observer.id, "obs_3");
  assert.equal(third.id, "pre_3");
  assert.equal(server.posts("/v1/objects").length, 3);
});

test("with beacon: true, pagehide sends the removal as a beacon with the observer's token", async () => {
  const { server, client } = setup();
  const page = fakePage();
  const presence = await join(server, client, page, { beacon: true }, entry(0, "pre_1", "alice"));
  page.hide(true); // into the back/forward cache: not leaving
  assert.deepEqual(page.beacons, []);
  page.dispatchEvent(Object.assign(new Event("pageshow"), { persisted: true }));
  page.hide();
  assert.deepEqual(page.beacons.map((beacon) => beacon.url), ["/v1/observers/obs_1/remove?access_token=tok_1"]);
  assert.equal(presence.state, "left");
  assert.equal(page.storage.size, 0, "nothing is kept for a reload");
  assert.ok(server.streams[0].signal.aborted);
});

test("an observer gone for good (its lease ran out while away) is joined again", async () => {
  const { server, client } = setup([["obs_1", "tok_1"], ["obs_2", "tok_2"]]);
  const page = fakePage();
  const totals = [];
  const presence = await join(server, client, page, { onChange: ({ total }) => totals.push(total) }, entry(0, "pre_1", "alice"));
  server.handlers["GET /v1/observers/obs_1/events"] = async () => notFound("no observer obs_1");
  server.streams[0].controller.close(); // the connection ends; its resume is refused: obs_1 is gone
  await until(() => server.posts("/v1/observers/obs_2/queries").length, "the second registration", 5000);
  assert.equal(server.streams.at(-1).path, "/v1/observers/obs_2/events");
  server.revision(40, 1, ["query", initial("qry_obs_2", 40, 2, entry(0, "pre_2", "alice"), entry(1, "pre_5", "bob"))]);
  await until(() => presence.state === "joined" && presence.total === 2, "the rejoin");
  assert.deepEqual([presence.observer.id, presence.id], ["obs_2", "pre_2"]);
  assert.deepEqual(users(presence), ["pre_2=alice", "pre_5=bob"]);
  assert.deepEqual(totals, [1, 2]);
  assert.equal(JSON.parse([...page.storage.values()][0]).observer, "obs_2");
});

test("a refused step rejects the join and leaves nothing behind: the observer is removed, its stream closed", async () => {
  const { server, client } = setup([["obs_1", "tok_1"]], {
    "POST /v1/objects": async () => [400, { error: { code: "unknownKeyPath", message: "Presence has no key 'mood'" } }],
  });
  const page = fakePage();
  await assert.rejects(client.presence("r1", { mood: "fine" }, { window: page }),
    (error) => error.status === 400 && error.code === "unknownKeyPath");
  await until(() => server.posts("/v1/observers/obs_1/remove").length === 1, "the removal");
  assert.ok(server.streams[0].signal.aborted, "the stream is closed");
  assert.equal(server.posts("/v1/observers/obs_1/queries").length, 0);
  assert.equal(page.storage.size, 0);
});
