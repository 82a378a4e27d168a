// The managed object context (Public/client/context.js) against a fake server with objects
// (fake-store.mjs): changes shown at once, saved as one transaction whose expect holds the
// revisions, each merge policy on a 412, undo/redo grouped per event-loop turn, and the offline
// queue over a network that goes away, loses an answer and comes back.

import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { ObsClient } from "../../Public/client/obs.js";
import { IDEMPOTENCY_MEMORY_MS } from "../../Public/client/context.js";
import { MemoryOutbox } from "../../Public/client/outbox.js";
import { FakeStore } from "./fake-store.mjs";

const contexts = [];
afterEach(() => { for (const context of contexts.splice(0)) context.close(); });

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

async function until(predicate, what = "the condition") {
  const deadline = Date.now() + 3000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function setup(options = {}, objects = { "acct-1": { balance: 100, owner: "ann" }, "acct-2": { balance: 50 } }) {
  const store = new FakeStore(objects);
  const client = new ObsClient({ fetch: store.fetch, retries: 0 });
  const context = client.context({ outbox: new MemoryOutbox(), retryMs: 5, ...options });
  contexts.push(context);
  return { store, client, context };
}

test("a change shows at once; save sends one transaction with a fresh id and expects the revisions it was made on", async () => {
  const { store, context } = setup();
  await context.load("acct-1");
  const changes = [];
  context.on("change", (change) => changes.push(change));
  context.set("acct-1", "balance", 70).set("acct-2", "balance", 80);
  assert.equal(context.get("acct-1").balance, 70, "shown before any answer");
  assert.equal(context.value("acct-2", "balance"), 80);
  assert.equal(context.hasChanges, true);
  assert.deepEqual(context.pending.map((operation) => operation.op), ["set", "set"]);
  assert.equal(changes.length, 2);
  const saved = [];
  context.on("saved", (event) => saved.push(event));
  const answer = await context.save();
  assert.equal(context.hasChanges, false);
  assert.equal(store.transactions.length, 1);
  const [body] = store.transactions;
  assert.equal(body.id, answer.id);
  assert.match(body.id, /^[A-Za-z0-9_-]{24}$/);
  assert.deepEqual(body.operations, [
    { op: "set", object: "acct-1", keyPath: "balance", value: 70 },
    { op: "set", object: "acct-2", keyPath: "balance", value: 80 },
  ]);
  assert.deepEqual(body.expect, [{ object: "acct-1", ifRevision: 1 }, { object: "acct-2", ifRevision: 1 }]);
  assert.deepEqual([store.value("acct-1", "balance"), store.value("acct-2", "balance")], [70, 80]);
  assert.deepEqual(saved.map((event) => [event.id, event.revision]), [[answer.id, answer.revision]]);
  // The context's objects are what the transaction left, at its revision: the next save expects it.
  assert.equal(context.base.get("acct-1").revision, answer.revision);
  context.patch("acct-1", { balance: 60, note: "x" });
  const second = await context.save();
  assert.notEqual(second.id, answer.id);
  assert.deepEqual(store.transactions[1].expect, [{ object: "acct-1", ifRevision: answer.revision }]);
  assert.equal(await context.save(), null, "nothing pending: nothing sent");
});

test("undo and redo take back and make again the changes of one event-loop turn", async () => {
  const { context } = setup();
  await context.load("acct-1");
  context.set("acct-1", "balance", 1);
  context.set("acct-1", "owner", "bob");
  await turn();
  context.set("acct-1", "balance", 2);
  context.set("acct-2", "balance", 3);
  assert.equal(context.undo(), true, "the open group closes and goes");
  assert.deepEqual([context.get("acct-1").balance, context.get("acct-1").owner], [1, "bob"]);
  assert.equal(context.value("acct-2", "balance"), undefined, "acct-2 was never loaded: nothing shown of it");
  assert.equal(context.undo(), true);
  assert.deepEqual([context.get("acct-1").balance, context.get("acct-1").owner, context.hasChanges], [100, "ann", false]);
  assert.equal(context.undo(), false);
  assert.equal(context.redo(), true);
  assert.deepEqual([context.get("acct-1").balance, context.get("acct-1").owner], [1, "bob"]);
  assert.equal(context.canRedo, true);
  await turn();
  context.set("acct-1", "owner", "cy");
  assert.equal(context.canRedo, false, "a new change forgets what was undone");
  await turn();
  context.undo();
  assert.deepEqual([context.get("acct-1").balance, context.get("acct-1").owner], [1, "bob"]);
  context.rollback();
  assert.deepEqual([context.get("acct-1").balance, context.hasChanges, context.canUndo], [100, false, false]);
});

/** A context whose change of acct-1 meets another client's write: the save gets a 412. */
async function conflicted(mergePolicy) {
  const setupResult = setup({ mergePolicy });
  const { store, context } = setupResult;
  await context.load("acct-1");
  context.set("acct-1", "balance", 70);
  store.write("acct-1", { balance: 500, owner: "zed" });
  const conflicts = [];
  context.on("conflict", (conflict) => conflicts.push(conflict));
  return { ...setupResult, conflicts };
}

test('"error": the save is refused, the changes stay pending, the app gets the conflict with both values', async () => {
  const { store, context, conflicts } = await conflicted("error");
  await assert.rejects(context.save(), (error) => error.status === 412 && error.conflict.policy === "error");
  assert.equal(context.hasChanges, true);
  assert.equal(context.get("acct-1").balance, 70, "ours still shown");
  assert.equal(conflicts.length, 1);
  assert.equal(conflicts[0].serverObjects.get("acct-1").values.balance, 500);
  assert.deepEqual(conflicts[0].ours.get("acct-1"), { balance: 70 });
  assert.equal(context.get("acct-1").owner, "zed", "the server's other values are taken");
  // Saving again now expects the server's revision: ours wins because the app chose it.
  await context.save();
  assert.equal(store.value("acct-1", "balance"), 70);
});

test('"serverWins": the transaction is dropped and the server\'s values are shown', async () => {
  const { store, context, conflicts } = await conflicted("serverWins");
  const answer = await context.save();
  assert.equal(answer.resolution, "serverWins");
  assert.deepEqual([context.hasChanges, context.get("acct-1").balance, store.value("acct-1", "balance")], [false, 500, 500]);
  assert.equal(conflicts[0].policy, "serverWins");
  assert.equal(store.transactions.length, 0);
});

test('"clientWins": sent again without expect (a fresh id), ours is what the server holds', async () => {
  const { store, context, conflicts } = await conflicted("clientWins");
  const answer = await context.save();
  assert.equal(store.value("acct-1", "balance"), 70);
  assert.equal(store.sent.length, 2);
  assert.ok(store.sent[0].expect);
  assert.equal(store.sent[1].expect, undefined);
  assert.notEqual(store.sent[0].id, store.sent[1].id);
  assert.equal(answer.id, store.sent[1].id);
  assert.equal(conflicts[0].policy, "clientWins");
  assert.equal(context.get("acct-1").balance, 70);
});

test("a function rebases: it makes the change again on the server's objects, sent with their revisions", async () => {
  const rebase = (ctx, server) => ctx.set("acct-1", "balance", server.get("acct-1").values.balance - 30);
  const { store, context, conflicts } = await conflicted(rebase);
  await context.save();
  assert.equal(store.value("acct-1", "balance"), 470);
  assert.equal(store.value("acct-1", "owner"), "zed");
  assert.deepEqual(store.sent[1].expect, [{ object: "acct-1", ifRevision: store.sent[0].expect[0].ifRevision + 1 }]);
  assert.equal(conflicts[0].policy, "rebase");
  assert.equal(context.hasChanges, false);
});

test("offline: saves are queued (and shown), kept across a reload, then sent in order, each exactly once", async () => {
  const outbox = new MemoryOutbox();
  const { store, client, context } = setup({ outbox });
  await context.load("acct-1");
  store.offline = true;
  context.set("acct-1", "balance", 1);
  const queued = [];
  context.on("queued", (event) => queued.push(event.id));
  const first = await context.save();
  assert.equal(first.queued, true);
  context.set("acct-1", "balance", 2);
  context.create({ id: "note-1", values: { text: "hi" } });
  const second = await context.save();
  assert.equal(second.queued, true);
  assert.deepEqual(queued, [first.id, second.id]);
  assert.equal(context.get("acct-1").balance, 2, "queued changes are shown");
  assert.deepEqual((await outbox.load()).map((entry) => entry.id), [first.id, second.id]);

  // A reload: a new context over the same outbox shows them, and sends them once the network is back.
  context.close();
  const reloaded = client.context({ outbox, retryMs: 5 });
  contexts.push(reloaded);
  await reloaded.ready;
  assert.equal(reloaded.value("acct-1", "balance"), 2);
  assert.deepEqual(reloaded.queued.map((entry) => entry.id), [first.id, second.id]);
  store.offline = false;
  store.loseNextAnswer = true; // the first one is applied, its answer lost: sent again, answered from memory
  const saved = [];
  reloaded.on("saved", (event) => saved.push(event.id));
  await until(() => saved.length === 2, "both saved");
  assert.deepEqual(saved, [first.id, second.id]);
  assert.deepEqual(store.transactions.map((body) => body.id), [first.id, second.id], "each applied once, in order");
  assert.deepEqual(store.sent.map((body) => body.id), [first.id, first.id, second.id], "the resend carried the same id");
  assert.deepEqual(store.sent[2].expect, [{ object: "acct-1", ifRevision: store.revision - 1 }], "the second expects what the first left");
  assert.deepEqual([store.value("acct-1", "balance"), store.objects.get("note-1").values.text], [2, "hi"]);
  assert.deepEqual(await outbox.load(), []);
});

test("past the server's 10 minutes of memory a resent transaction is never sent without expect", async () => {
  const outbox = new MemoryOutbox();
  await outbox.put({
    id: "tx-old", seq: 1, revisions: { "acct-1": 1 }, createdAt: 0, attempts: 1, expectless: false,
    firstSentAt: Date.now() - IDEMPOTENCY_MEMORY_MS - 1000,
    changes: [{ operation: { op: "set", object: "acct-1", keyPath: "balance", value: 7 }, effects: [{ object: "acct-1", key: "balance", value: 7 }] }],
  });
  const { store, context } = setup({ outbox, mergePolicy: "clientWins" }, { "acct-1": { balance: 7 } });
  store.write("acct-1", { balance: 7 }); // as if it had been applied once, its answer lost
  const conflicts = [];
  context.on("conflict", (conflict) => conflicts.push(conflict));
  await until(() => conflicts.length === 1, "the conflict");
  assert.deepEqual([conflicts[0].policy, conflicts[0].maybeApplied], ["error", true]);
  assert.equal(store.sent.length, 1, "not sent again without expect");
  assert.equal(context.hasChanges, true, "the app decides");
});
