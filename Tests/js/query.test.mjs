// Live queries of Public/client/obs.js (Observer.query, ./query.js) against a fake server: the
// registration, records applied from the observer's stream (before and after the registration's
// answer), the rebuild after a reset, a lost record repaired from POST /v1/query, deduplication,
// cancellation and close.

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { ObsClient } from "../../Public/client/obs.js";
import { FakeServer, json } from "./fake-server.mjs";

/** The observers a test made: their streams are closed after it, so a failed test does not keep Node running. */
const observers = [];
afterEach(() => {
  for (const observer of observers.splice(0)) {
    observer.queryRouter.each((query) => query.end());
    observer.queryRouter.stream?.close();
  }
});

/** Waits (at most 2 s) until `predicate()` holds. */
async function until(predicate, what = "the condition") {
  const deadline = Date.now() + 2000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const DEFINITION = { class: "Order", where: [["status", "==", "open"]], orderBy: [["total", "desc"]], limit: 3, select: ["total"] };
const QUERY = { id: "qry_1", ...DEFINITION, options: ["initial", "new", "old"], context: null, createdAt: "2026-11-27T00:00:00Z" };
const member = (index, id, total, extra = {}) => ({ index, id, new: { total }, ...extra });
const initial = (revision, total, ...inserted) => ({ query: "qry_1", revision, total, initial: true, removed: [], inserted, updated: [] });
const shape = (query) => query.members.map(({ id, values }) => `${id}=${values.total}`);

/** A client whose observer `obs_1` (token "ot") registers qry_1; `registered` resolves once POST /queries was answered. */
function setup(extra = {}) {
  let answered;
  const registered = new Promise((resolve) => { answered = resolve; });
  const server = new FakeServer({
    "POST /v1/observers/obs_1/queries": async () => {
      queueMicrotask(answered);
      return [201, { query: QUERY }];
    },
    "DELETE /v1/observers/obs_1/queries/qry_1": async () => [204, null],
    ...extra,
  });
  const observer = new ObsClient({ fetch: server.fetch }).observer("obs_1", "ot");
  observers.push(observer);
  return { server, observer, registered };
}

test("a query registers, takes its initial record and applies each record of the stream", async () => {
  const { server, observer } = setup();
  const changes = [];
  const pending = observer.query(DEFINITION, { context: { mine: 1 }, onChange: (change) => changes.push(change) });
  await until(() => server.streams.length === 1, "the stream");
  server.send(["synced", { lastEventId: 0, revision: 9 }]);
  await until(() => server.calls.some((call) => call.method === "POST"), "the registration");
  server.revision(10, 1, ["query", initial(10, 4, member(0, "o1", 900), member(1, "o2", 500), member(2, "o3", 100))]);
  const query = await pending;

  const post = server.calls.find((call) => call.method === "POST");
  assert.equal(post.path, "/v1/observers/obs_1/queries");
  assert.equal(post.headers.Authorization, "Bearer ot");
  assert.deepEqual(post.body, { ...DEFINITION, options: ["initial", "new", "old"], context: { mine: 1 } });
  assert.equal(server.streams[0].headers.Authorization, "Bearer ot");
  assert.equal(query.id, "qry_1");
  assert.equal(query.state, "live");
  assert.deepEqual(shape(query), ["o1=900", "o2=500", "o3=100"]);
  assert.deepEqual([query.total, query.revision], [4, 10]);

  // o3 rises to the top (a move), o4 enters in o2's place… all one revision, after a change record.
  server.revision(11, 2, ["change", { observation: "reg_1", object: "x", keyPath: "k", kind: "setting", new: 1 }],
    ["query", {
      query: "qry_1", total: 4,
      removed: [{ index: 1, id: "o2", old: { total: 500 } }, { index: 2, id: "o3", moved: true, old: { total: 100 } }],
      inserted: [{ index: 0, id: "o3", moved: true, new: { total: 1000 } }, member(2, "o4", 400)],
      updated: [{ index: 1, id: "o1", old: { total: 900 }, new: { total: 950 } }],
    }]);
  await until(() => query.revision === 11, "revision 11");
  assert.deepEqual(shape(query), ["o3=1000", "o1=950", "o4=400"]);
  // Only the total changes.
  server.revision(12, 4, ["query", { query: "qry_1", total: 7, removed: [], inserted: [], updated: [] }]);
  await until(() => query.total === 7, "total 7");
  assert.deepEqual(shape(query), ["o3=1000", "o1=950", "o4=400"]);
  // A record of an older revision (another stream's replay) is not applied twice.
  server.revision(11, 5, ["query", { query: "qry_1", total: 1, removed: [{ index: 0, id: "o3" }], inserted: [], updated: [] }]);
  server.revision(13, 6, ["query", { query: "qry_1", total: 6, removed: [{ index: 2, id: "o4" }], inserted: [], updated: [] }]);
  await until(() => query.revision === 13, "revision 13");
  assert.deepEqual(shape(query), ["o3=1000", "o1=950"]);
  assert.deepEqual(changes.map((change) => [change.revision, change.initial, change.members.length]),
    [[10, true, 3], [11, false, 3], [12, false, 3], [13, false, 2]]);
  assert.equal(changes[1].record.updated[0].id, "o1");

  await query.close();
  const deleted = server.calls.at(-1);
  assert.deepEqual([deleted.method, deleted.path, deleted.headers.Authorization], ["DELETE", "/v1/observers/obs_1/queries/qry_1", "Bearer ot"]);
  assert.equal(query.state, "closed");
  // The stream was opened for the queries: closed with the last one.
  assert.equal(observer.queryRouter.stream.state, "closed");
});

test("records that arrive before the registration's answer are kept for it; others are not", async () => {
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const { server, observer } = setup({
    "POST /v1/observers/obs_1/queries": async () => {
      await held;
      return [201, { query: QUERY }];
    },
  });
  const stream = observer.stream(); // the user's own stream feeds the queries too: no second one
  const pending = observer.query(DEFINITION);
  await until(() => server.streams.length === 1 && server.calls.some((call) => call.method === "POST"), "the requests");
  server.send(["synced", { lastEventId: 0, revision: 1 }]);
  server.revision(2, 1, ["query", { ...initial(2, 1, member(0, "o1", 5)), query: "qry_other" }]);
  server.revision(2, 2, ["query", initial(2, 2, member(0, "o1", 5), member(1, "o2", 3))]);
  server.revision(3, 3, ["query", { query: "qry_1", total: 2, removed: [], inserted: [], updated: [{ index: 1, id: "o2", new: { total: 4 } }] }]);
  await until(() => stream.lastEventId === 3, "the events");
  release();
  const query = await pending;
  assert.deepEqual(shape(query), ["o1=5", "o2=4"]);
  assert.equal(server.streams.length, 1);
  assert.deepEqual(observer.queryRouter.unclaimed, []);
  await query.close();
  assert.equal(stream.state, "live", "the user's stream is the user's to close");
  stream.close();
});

test("a reset's rebuild replaces the window; a query missing from it is checked and cancelled when gone", async () => {
  const { server, observer } = setup({
    "GET /v1/observers/obs_1/queries/qry_1": async () => [404, { error: { code: "notFound", message: "no query" } }],
  });
  const resets = [];
  const cancels = [];
  const changes = [];
  const pending = observer.query(DEFINITION, {
    onReset: (info) => resets.push(info), onCancel: (info) => cancels.push(info), onChange: (change) => changes.push(change),
  });
  await until(() => server.streams.length === 1 && server.calls.some((call) => call.method === "POST"), "the requests");
  server.send(["synced", { lastEventId: 0, revision: 1 }]);
  server.revision(2, 1, ["query", initial(2, 2, member(0, "o1", 5), member(1, "o2", 3))]);
  const query = await pending;

  // The stream fell out of the buffer: reset, the rebuild (no ids), synced.
  server.send(["reset", { reason: "gap", oldestAvailable: 40 }],
    ["query", initial(50, 1, member(0, "o9", 70))], ["synced", { lastEventId: 45, revision: 50 }]);
  await until(() => query.revision === 50, "the rebuild");
  assert.deepEqual(shape(query), ["o9=70"]);
  assert.deepEqual(resets, [{ reason: "gap", oldestAvailable: 40 }]);
  assert.equal(changes.at(-1).initial, true);

  // A second reset whose rebuild has no record of qry_1: the server says it is gone.
  server.send(["reset", { reason: "gap", oldestAvailable: 60 }], ["synced", { lastEventId: 61, revision: 70 }]);
  await until(() => cancels.length === 1, "the cancel");
  assert.equal(query.state, "closed");
  assert.deepEqual(cancels, [{ query: "qry_1", reason: "unobserved" }]);
  assert.ok(server.calls.some((call) => call.method === "GET" && call.path === "/v1/observers/obs_1/queries/qry_1"));
});

test("a record that does not fit (one was lost) repairs the window from POST /v1/query", async () => {
  let snapshots = 0;
  let answerSnapshot;
  const snapshotHeld = new Promise((resolve) => { answerSnapshot = resolve; });
  const { server, observer } = setup({
    "POST /v1/query": async (body, call) => {
      snapshots += 1;
      assert.deepEqual(body, DEFINITION);
      assert.equal(call.headers.Authorization, "Bearer ot");
      await snapshotHeld;
      return [200, { objects: [{ id: "o2", values: { total: 8 } }, { id: "o5", values: { total: 6 } }], total: 2, revision: 5 }];
    },
  });
  const pending = observer.query(DEFINITION);
  await until(() => server.streams.length === 1 && server.calls.some((call) => call.method === "POST"), "the requests");
  server.send(["synced", { lastEventId: 0, revision: 1 }]);
  server.revision(2, 1, ["query", initial(2, 1, member(0, "o1", 5))]);
  const query = await pending;
  // Revision 3's record was lost: revision 4's names o2 at index 0, where o1 is.
  server.revision(4, 2, ["query", { query: "qry_1", total: 2, removed: [{ index: 0, id: "o2" }], inserted: [], updated: [] }]);
  await until(() => snapshots === 1, "the snapshot request");
  assert.equal(query.state, "starting");
  // While the snapshot is on its way: a record it already holds (5) and one after it (6).
  server.revision(5, 3, ["query", { query: "qry_1", total: 2, removed: [], inserted: [member(1, "o5", 6)], updated: [] }]);
  server.revision(6, 4, ["query", { query: "qry_1", total: 3, removed: [], inserted: [member(2, "o6", 1)], updated: [] }]);
  await until(() => observer.queryRouter.stream.lastEventId === 4, "the records");
  answerSnapshot();
  await until(() => query.revision === 6, "revision 6");
  assert.deepEqual(shape(query), ["o2=8", "o5=6", "o6=1"]);
  assert.equal(query.state, "live");
  assert.equal(snapshots, 1);
  await query.close();
});

test("without the initial option the window comes from a snapshot; a second registration of the same query shares it", async () => {
  let registrations = 0;
  const { server, observer } = setup({
    "POST /v1/observers/obs_1/queries": async (body) => {
      registrations += 1;
      assert.deepEqual(body.options, ["new"]);
      return registrations === 1 ? [201, { query: { ...QUERY, options: ["new"] } }]
        : [200, { query: { ...QUERY, options: ["new"] }, deduplicated: true }];
    },
    "POST /v1/query": async () => [200, { objects: [{ id: "o1", values: { total: 2 } }], total: 1, revision: 7 }],
  });
  const first = await observer.query(DEFINITION, { options: ["new"] });
  assert.deepEqual([shape(first), first.revision], [["o1=2"], 7]);
  const told = [];
  const second = await observer.query(DEFINITION, { options: ["new"], onChange: (change) => told.push(change.initial) });
  assert.equal(second.id, first.id);
  assert.deepEqual(told, [true], "the shared window is told as the first one");
  assert.equal(server.calls.filter((call) => call.path === "/v1/query").length, 1, "the second one took the first's window");
  server.send(["synced", { lastEventId: 0, revision: 7 }]);
  server.revision(8, 1, ["query", { query: "qry_1", total: 2, removed: [], inserted: [member(1, "o2", 1)], updated: [] }]);
  await until(() => first.revision === 8 && second.revision === 8, "revision 8 in both");
  assert.deepEqual(shape(second), ["o1=2", "o2=1"]);
  assert.deepEqual(told, [true, false]);
  await first.close();
  assert.equal(server.calls.filter((call) => call.method === "DELETE").length, 0, "the second one still uses it");
  await second.close();
  assert.equal(server.calls.filter((call) => call.method === "DELETE").length, 1);
});

test("a registration whose initial record never comes (it left a tiny buffer) falls back to a snapshot", async () => {
  const { server, observer } = setup({
    "POST /v1/query": async () => [200, { objects: [{ id: "o3", values: { total: 1 } }], total: 1, revision: 4 }],
  });
  const query = await observer.query(DEFINITION, { initialTimeoutMs: 20 });
  assert.deepEqual([shape(query), query.revision], [["o3=1"], 4]);
  // The registration's record, late: older than the snapshot, so not applied.
  server.send(["synced", { lastEventId: 0, revision: 4 }]);
  server.revision(3, 1, ["query", initial(3, 0)]);
  server.revision(5, 2, ["query", { query: "qry_1", total: 0, removed: [{ index: 0, id: "o3" }], inserted: [], updated: [] }]);
  await until(() => query.revision === 5, "revision 5");
  assert.deepEqual(shape(query), []);
  await query.close();
});

test("a cancelled event ends the query; a stream refused for good fails the others", async () => {
  const { server, observer } = setup();
  const cancels = [];
  const errors = [];
  const pending = observer.query(DEFINITION, { onCancel: (info) => cancels.push(info) });
  await until(() => server.streams.length === 1 && server.calls.some((call) => call.method === "POST"), "the requests");
  server.send(["synced", { lastEventId: 0, revision: 1 }]);
  server.revision(2, 1, ["query", initial(2, 0)]);
  const query = await pending;
  server.revision(3, 2, ["cancelled", { query: "qry_1", reason: "unobserved" }]);
  await until(() => cancels.length === 1, "the cancel");
  assert.equal(query.state, "closed");
  await query.close(); // closed already: nothing sent
  assert.equal(server.calls.filter((call) => call.method === "DELETE").length, 0);

  // A stream answered 404 (the observer is gone) fails the live queries with the error.
  const other = new FakeServer({
    "POST /v1/observers/obs_2/queries": async () => [201, { query: { ...QUERY, id: "qry_2" } }],
    "POST /v1/query": async () => [200, { objects: [], total: 0, revision: 1 }],
  });
  const observer2 = new ObsClient({ fetch: other.fetch }).observer("obs_2");
  observers.push(observer2);
  const live = await observer2.query(DEFINITION, { options: ["new"], onError: (error) => errors.push(error) });
  other.answer = async () => json({ error: { code: "notFound", message: "no observer obs_2" } }, 404);
  other.streams[0].controller.close(); // the connection ends; the reconnect is refused
  await until(() => errors.length === 1, "the error");
  assert.equal(errors[0].status, 404);
  assert.equal(live.state, "closed");
});

test("a refused registration rejects with the server's error and closes the stream opened for it", async () => {
  const { server, observer } = setup({
    "POST /v1/observers/obs_1/queries": async () => [400, { error: { code: "unknownKeyPath", message: "no key path 'totl'" } }],
  });
  await assert.rejects(observer.query({ ...DEFINITION, select: ["totl"] }),
    (error) => error.status === 400 && error.code === "unknownKeyPath");
  assert.equal(server.streams.length, 1);
  assert.equal(observer.queryRouter.stream.state, "closed");
  assert.equal(observer.queryRouter.pending, 0);
});
