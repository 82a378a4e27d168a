// The dashboard's client-side logic that needs no page: the feed's id filter and its transaction
// entries, the natural order, and how the Objects table's query is replaced (Public/js/objects-query.js) against a fake observer.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ObsError } from "../../Public/client/http.js";
import { appendEvent, entryMatcher, idRange, transactionSummary } from "../../Public/js/feed-entries.js";
import { idMatcher } from "../../Public/js/id-filter.js";
import { naturally } from "../../Public/js/queries.js";

globalThis.addEventListener ??= () => {}; // objects-query.js listens for pagehide
const { ObjectsQuery, refusedDefinition } = await import("../../Public/js/objects-query.js");

describe("the feed's id filter", () => {
  test("an id matches itself only", () => {
    const match = idMatcher(" emp-1 ");
    assert.deepEqual(["emp-1", "emp-10", "emp-19", "xemp-1", null].map(match), [true, false, false, false, false]);
  });
  test("a trailing * is a prefix; an empty field matches everything (no matcher)", () => {
    const match = idMatcher("emp-1*");
    assert.deepEqual(["emp-1", "emp-10", "emp-2", null].map(match), [true, true, false, false]);
    assert.equal(idMatcher("  "), null);
    assert.equal(idMatcher("*")("anything"), true);
  });
});

describe("the feed's transaction entries", () => {
  /** The entries the feed makes of admin events `[kind, data, id]`, oldest first. */
  const entriesOf = (...events) => {
    const entries = [];
    for (const [kind, data, id] of events) appendEvent(entries, kind, data, id);
    return entries;
  };
  const set = (object, value, revision, tx) => ["valueChanged", { object, keyPath: "balance", value, revision, tx }];
  const transfer = [
    [...set("acct-1", 70, 9, "tx-1"), 11],
    [...set("acct-2", 80, 9, "tx-1"), 12],
    ["notificationPosted", { name: "Moved", object: "acct-1", delivered: 0, revision: 9, tx: "tx-1" }, 13],
  ];

  test("a transaction's events, same tx and revision, make one entry labelled with its id", () => {
    const entries = entriesOf([...set("acct-1", 100, 8), 10], ...transfer, [...set("acct-1", 60, 10), 14]);
    assert.deepEqual(entries.map((entry) => entry.kind), ["valueChanged", "transaction", "valueChanged"]);
    const [, tx] = entries;
    assert.equal(tx.tx, "tx-1");
    assert.equal(tx.revision, 9);
    assert.deepEqual(tx.events.map((event) => [event.kind, event.id, event.data.object]),
      [["valueChanged", 11, "acct-1"], ["valueChanged", 12, "acct-2"], ["notificationPosted", 13, "acct-1"]]);
    assert.equal(transactionSummary(tx), "3 events: valueChanged ×2, notificationPosted");
    assert.equal(idRange(tx), "#11–#13");
  });

  test("another tx, or the same id in another revision (another credential's), is another entry", () => {
    const entries = entriesOf(...transfer, [...set("acct-1", 50, 10, "tx-1"), 14], [...set("acct-1", 40, 10, "tx-2"), 15]);
    assert.deepEqual(entries.map((entry) => [entry.kind, entry.tx, entry.revision, entry.events.length]),
      [["transaction", "tx-1", 9, 3], ["transaction", "tx-1", 10, 1], ["transaction", "tx-2", 10, 1]]);
    assert.equal(transactionSummary(entries[1]), "1 event: valueChanged");
    assert.equal(idRange(entries[1]), "#14");
    // An event without tx never joins a transaction, even in its revision.
    assert.equal(entriesOf(...transfer, [...set("acct-3", 1, 9), 14]).length, 2);
  });

  test("appendEvent says whether the event made a new entry", () => {
    const entries = [];
    assert.equal(appendEvent(entries, ...transfer[0]).added, true);
    const { entry, added } = appendEvent(entries, ...transfer[1]);
    assert.equal(added, false);
    assert.equal(entry, entries[0]);
  });

  test("the filters match a transaction when one of its events matches; kind 'transaction' matches transactions", () => {
    const entries = entriesOf([...set("acct-3", 1, 8), 10], ...transfer);
    const shown = (filters) => entries.filter(entryMatcher(filters)).map((entry) => entry.tx ?? entry.data.object);
    assert.deepEqual(shown({}), ["acct-3", "tx-1"]);
    assert.deepEqual(shown({ object: idMatcher("acct-2") }), ["tx-1"]);
    assert.deepEqual(shown({ object: idMatcher("acct-3") }), ["acct-3"]);
    assert.deepEqual(shown({ kind: "notificationPosted" }), ["tx-1"]);
    assert.deepEqual(shown({ kind: "valueChanged" }), ["acct-3", "tx-1"]);
    assert.deepEqual(shown({ kind: "transaction" }), ["tx-1"]);
    assert.deepEqual(shown({ kind: "transaction", object: idMatcher("acct-3") }), []);
    assert.deepEqual(shown({ kind: "objectCreated" }), []);
    assert.deepEqual(shown({ observer: idMatcher("obs_1") }), []);
  });
});

test("natural order: numbers inside ids compare as numbers, and distinct ids never tie", () => {
  assert.deepEqual(["emp-10", "emp-2", "emp-1", "emp-11", "Emp-1"].sort(naturally), ["emp-1", "Emp-1", "emp-2", "emp-10", "emp-11"]);
  assert.notEqual(naturally("a", "A"), 0);
});

/** A fake observer: each query() is a registration that answers after `delay` ms. */
function fakeApi({ refuse = () => null, delay = 5 } = {}) {
  const log = { observers: 0, registered: [], closed: [], live: new Map() };
  let next = 0;
  const observer = {
    queryRouter: { stream: null },
    async query(definition, handlers) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      const error = refuse(definition);
      if (error) throw error;
      const key = JSON.stringify(definition);
      const id = log.live.get(key)?.id ?? `q${++next}`; // the server deduplicates one definition
      const entry = log.live.get(key) ?? { id, holders: 0 };
      entry.holders += 1;
      log.live.set(key, entry);
      log.registered.push(definition);
      return {
        id, definition, handlers, members: [],
        close: async () => {
          log.closed.push(definition);
          entry.holders -= 1;
          if (entry.holders === 0) log.live.delete(key);
        },
      };
    },
  };
  const api = { client: { name: "dashboard-test", createObserver: async () => { log.observers += 1; return observer; } } };
  return { api, log };
}

function objectsQuery(api) {
  const windows = [];
  const statuses = [];
  const live = new ObjectsQuery(api, { onWindow: (query) => windows.push(query), onStatus: (status) => statuses.push(status) });
  return { live, windows, statuses };
}

describe("the Objects table's query", () => {
  test("the same definition asked twice at once (change, then submit) leaves one query, never closed under the other", async () => {
    const { api, log } = fakeApi();
    const { live } = objectsQuery(api);
    await live.start({ where: [], limit: 100 });
    const filtered = { class: "Order", where: [], limit: 100 };
    await Promise.all([live.apply(filtered), live.apply({ ...filtered })]);
    assert.equal(log.observers, 1);
    assert.deepEqual([...log.live.keys()], [JSON.stringify(filtered)]);
    assert.equal(log.live.get(JSON.stringify(filtered)).holders, 1);
    assert.equal(live.query.definition.class, "Order");
  });

  test("definitions asked while one is registering: only the newest is registered next", async () => {
    const { api, log } = fakeApi({ delay: 20 });
    const { live } = objectsQuery(api);
    await live.start({ where: [], limit: 1 });
    const first = live.apply({ where: [], limit: 2 });
    await new Promise((resolve) => setTimeout(resolve, 5)); // 2 is registering
    await Promise.all([first, ...[3, 4].map((limit) => live.apply({ where: [], limit }))]);
    assert.deepEqual(log.registered.map((d) => d.limit), [1, 2, 4]);
    assert.deepEqual([...log.live.keys()], [JSON.stringify({ where: [], limit: 4 })]);
  });

  test("an unknown class keeps the last good query and observer, and is not retried", async () => {
    const refuse = (definition) => (definition.class === "Nope"
      ? new ObsError(404, "notFound", "no class 'Nope'", { class: "Nope" }) : null);
    const { api, log } = fakeApi({ refuse });
    const { live, statuses } = objectsQuery(api);
    await live.start({ where: [], limit: 100 });
    const good = live.query;
    await live.apply({ class: "Nope", where: [], limit: 100 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(live.query, good);
    assert.equal(log.observers, 1);
    assert.equal(log.registered.length, 1);
    assert.equal(live.retry === null || live.retry === undefined || statuses.at(-1).invalid, true);
    assert.match(statuses.at(-1).message, /no class 'Nope'.*last filter that worked/);
    assert.equal(statuses.at(-1).state, "error");
  });

  test("a refused definition is a 400 or a 404 naming a class; a 404 for the observer is not", () => {
    assert.equal(refusedDefinition(new ObsError(400, "unknownKeyPath", "x")), true);
    assert.equal(refusedDefinition(new ObsError(404, "notFound", "no class 'x'", { class: "x" })), true);
    assert.equal(refusedDefinition(new ObsError(404, "notFound", "no observer 'o'", { observer: "o" })), false);
    assert.equal(refusedDefinition(new ObsError(0, "network", "down")), false);
  });
});

test("a query of a class that does not exist says to define it (the client's error)", async () => {
  const { missingClass } = await import("../../Public/client/query.js");
  const error = missingClass(new ObsError(404, "notFound", "no class 'Order'", { class: "Order" }));
  assert.equal(String(error), "404 notFound: no class 'Order': define it first (PUT /v1/classes/Order with its properties), then query it");
  const other = new ObsError(404, "notFound", "no observer 'o'", { observer: "o" });
  assert.equal(missingClass(other).message, "no observer 'o'");
});

test("after a refused definition, asking for the live one again says it is live and shows its window", async () => {
  const refuse = (definition) => (definition.class === "Nope"
    ? new ObsError(404, "notFound", "no class 'Nope'", { class: "Nope" }) : null);
  const { api, log } = fakeApi({ refuse });
  const { live, windows, statuses } = objectsQuery(api);
  const good = { class: "Order", where: [], limit: 100 };
  await live.start(good);
  await live.apply({ class: "Nope", where: [], limit: 100 });
  assert.equal(statuses.at(-1).state, "error");
  const shown = windows.length;
  await live.apply({ ...good });
  assert.equal(statuses.at(-1).state, "live");
  assert.equal(windows.length, shown + 1);
  assert.equal(log.registered.length, 1); // not registered again
});

test("an apply while another runs is never left waiting", async () => {
  const { api, log } = fakeApi({ delay: 1 });
  const { live } = objectsQuery(api);
  await live.start({ where: [], limit: 1 });
  for (let limit = 2; limit < 12; limit++) {
    live.apply({ where: [], limit });
    await new Promise((resolve) => setTimeout(resolve, limit % 3)); // some during, some after a registration
  }
  await live.running;
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(live.running, null);
  assert.equal(live.query.definition.limit, 11);
  assert.deepEqual([...log.live.keys()], [JSON.stringify({ where: [], limit: 11 })]);
});
