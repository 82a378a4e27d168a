// A context's changes in its client's live query windows (Public/client/overlay.js, query.js):
// shown at once, filtered, sorted and refilled here by section 12's rules, and each saved
// transaction's changes retired from a window exactly when the records carrying its `tx` arrive.

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { ObsClient } from "../../Public/client/obs.js";
import { MemoryOutbox } from "../../Public/client/outbox.js";
import { FakeStore } from "./fake-store.mjs";

const cleanups = [];
afterEach(() => { for (const cleanup of cleanups.splice(0)) cleanup(); });

async function until(predicate, what = "the condition") {
  const deadline = Date.now() + 3000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const DEFINITION = { class: "Order", where: [["status", "==", "open"]], orderBy: [["total", "desc"]], limit: 3, select: ["total"] };
const TOTALS = { o1: 500, o2: 400, o3: 300, o4: 200, o5: 100 };
const member = (index, id) => ({ index, id, new: { total: TOTALS[id], status: "open" } });
const shape = (members) => members.map(({ id, values }) => `${id}=${values.total}`);

/** A context, then a live query of open orders by total (three shown, five match), its window in. */
async function setup() {
  const objects = Object.fromEntries(Object.entries(TOTALS).map(([id, total]) => [id, { status: "open", total }]));
  let registered = null;
  const store = new FakeStore(objects, {
    "POST /v1/observers/obs_1/queries": async (body) => {
      registered = body;
      return [201, { query: { id: "qry_1", ...body, createdAt: "2026-11-28T00:00:00Z" } }];
    },
    "DELETE /v1/observers/obs_1/queries/qry_1": async () => [204, null],
  });
  for (const object of store.objects.values()) object.class = "Order";
  const client = new ObsClient({ fetch: store.fetch, retries: 0 });
  const context = client.context({ outbox: new MemoryOutbox() });
  const observer = client.observer("obs_1", "ot");
  const changes = [];
  const pending = observer.query(DEFINITION, { onChange: (change) => changes.push({ local: change.local === true, members: shape(change.members), total: change.total }) });
  await until(() => store.server.streams.length === 1 && registered, "the registration");
  store.server.revision(1, 1, ["query", { query: "qry_1", revision: 1, total: 5, initial: true, removed: [], updated: [],
    inserted: ["o1", "o2", "o3", "o4", "o5"].map((id, n) => member(n, id)) }]);
  const query = await pending;
  cleanups.push(() => { context.close(); query.end(); observer.queryRouter.stream?.close(); });
  return { store, context, query, changes, registered };
}

test("a local query asks for what the evaluator reads and for spare members; the app sees its own select and limit", async () => {
  const { query, registered } = await setup();
  assert.deepEqual(registered.select, ["total", "status"]);
  assert.equal(registered.limit, 3 + 25);
  assert.deepEqual(shape(query.members), ["o1=500", "o2=400", "o3=300"]);
  assert.deepEqual(query.members[0].values, { total: 500 });
  assert.equal(query.total, 5);
});

test("with nothing pending, a member the server did not change stays the same object (views redraw what changed)", async () => {
  const { store, query } = await setup();
  const [first, second] = query.members;
  store.server.revision(2, 10, ["query", { query: "qry_1", total: 5, removed: [], inserted: [],
    updated: [{ index: 1, id: "o2", new: { total: 450 } }] }]);
  await until(() => query.revision === 2, "revision 2");
  assert.equal(query.members[0], first);
  assert.notEqual(query.members[1], second);
  assert.deepEqual(shape(query.members), ["o1=500", "o2=450", "o3=300"]);
});

test("changes reach the window at once: reordered, filtered out, refilled, created, deleted, undone", async () => {
  const { context, query, changes } = await setup();
  changes.length = 0;
  context.set("o3", "total", 1000);
  assert.deepEqual(shape(query.members), ["o3=1000", "o1=500", "o2=400"], "no await: already there");
  assert.deepEqual(changes.at(-1), { local: true, members: ["o3=1000", "o1=500", "o2=400"], total: 5 });
  context.set("o1", "status", "closed");
  assert.deepEqual(shape(query.members), ["o3=1000", "o2=400", "o4=200"], "o1 leaves, o4 refills the window");
  assert.equal(query.total, 4);
  context.create({ id: "o9", class: "Order", values: { status: "open", total: 450 } });
  assert.deepEqual(shape(query.members), ["o3=1000", "o9=450", "o2=400"]);
  assert.equal(query.total, 5);
  context.create({ id: "x1", class: "Other", values: { status: "open", total: 9999 } });
  assert.deepEqual(shape(query.members), ["o3=1000", "o9=450", "o2=400"], "another class never enters");
  context.delete("o3");
  assert.deepEqual(shape(query.members), ["o9=450", "o2=400", "o4=200"]);
  assert.equal(query.total, 4);
  context.undo(); // all of this turn's changes
  assert.deepEqual(shape(query.members), ["o1=500", "o2=400", "o3=300"]);
  assert.equal(query.total, 5);
  const count = changes.length;
  context.set("o5", "note", "unselected");
  assert.equal(changes.length, count, "a change the window does not show is not told");
});

test("a saved transaction's changes stay in the window until the record carrying its tx, then the server's window shows", async () => {
  const { store, context, query, changes } = await setup();
  context.set("o3", "total", 1000);
  changes.length = 0;
  store.write("o5", { total: 150 }); // another client's write: revision 2
  const answer = await context.save(); // revision 3
  assert.equal(answer.revision, 3);
  assert.deepEqual(shape(query.members), ["o3=1000", "o1=500", "o2=400"], "answered, its records not in yet");
  // The other writer's record (revision 2) comes: the window changes under the pending value, which stays.
  store.server.revision(2, 10, ["query", { query: "qry_1", total: 5, removed: [], inserted: [],
    updated: [{ index: 4, id: "o5", new: { total: 150 } }] }]);
  await until(() => query.revision === 2, "revision 2");
  assert.equal(context.sender.entries.length, 1, "not retired by a record without its tx");
  assert.deepEqual(shape(query.members), ["o3=1000", "o1=500", "o2=400"]);
  // Its record: o3 moves to the top on the server, the overlay goes, and the window looks the same.
  store.server.revision(3, 11, ["query", { query: "qry_1", total: 5, tx: answer.id, updated: [],
    removed: [{ index: 2, id: "o3", moved: true }], inserted: [{ index: 0, id: "o3", moved: true, new: { total: 1000 } }] }]);
  await until(() => query.revision === 3, "revision 3");
  assert.equal(context.sender.entries.length, 0, "retired on its tx");
  assert.deepEqual(shape(query.members), ["o3=1000", "o1=500", "o2=400"]);
  assert.ok(changes.every((change) => change.members[0] === "o3=1000"), "never the old value in between");
});

test("a record with the tx that comes before the save's answer retires it from that window at once", async () => {
  const { store, context, query } = await setup();
  context.set("o2", "total", 50);
  let release;
  store.holdAnswers = new Promise((resolve) => { release = resolve; });
  const saving = context.save();
  await until(() => store.transactions.length === 1, "the write");
  const { id } = store.transactions[0];
  store.server.revision(2, 10, ["query", { query: "qry_1", total: 5, tx: id, updated: [],
    removed: [{ index: 1, id: "o2", moved: true }], inserted: [{ index: 4, id: "o2", moved: true, new: { total: 50 } }] }]);
  await until(() => query.revision === 2, "revision 2");
  assert.deepEqual(shape(query.members), ["o1=500", "o3=300", "o4=200"]);
  assert.equal(query.hasHad(id, null), true);
  release();
  await saving;
  assert.equal(context.sender.entries.length, 0);
  assert.deepEqual(shape(query.members), ["o1=500", "o3=300", "o4=200"]);
});

test("a transaction the window does not show is retired at its answer: no record of it will come", async () => {
  const { context, query } = await setup();
  context.set("o4", "note", "not selected, not read");
  await context.save();
  assert.equal(context.sender.entries.length, 0);
  assert.deepEqual(shape(query.members), ["o1=500", "o2=400", "o3=300"]);
});
