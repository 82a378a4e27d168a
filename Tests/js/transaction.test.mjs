// Transactions in /client/obs.js (ObsClient.transaction, contract 15) against a fake server: the
// body it sends, the id as the Idempotency-Key of the request and of every retry, the answer as
// the server gives it, and refusals as ObsErrors with the index of the operation or condition.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ObsClient, ObsError } from "../../Public/client/obs.js";
import { FakeServer, json } from "./fake-server.mjs";

const TRANSFER = [
  { op: "set", object: "acct-1", keyPath: "balance", value: 70 },
  { op: "set", object: "acct-2", keyPath: "balance", value: 80 },
];
const EXPECT = [{ object: "acct-1", where: [["balance", ">=", 30]] }];

/** The contract's error body as a handler's `[status, body]`. */
const refusal = (status, code, details) => [status, { error: { code, message: `refused: ${code}`, details } }];

test("a transaction posts its operations, id and expect, with the id as its Idempotency-Key", async () => {
  const server = new FakeServer({
    "POST /v1/transactions": async (body) => [200, { revision: 9, id: body.id, results: body.operations.map(() => ({})) }],
  });
  const client = new ObsClient({ fetch: server.fetch, name: "teller", token: "t" });
  const answer = await client.transaction(TRANSFER, { id: "tx-1", expect: EXPECT });
  assert.deepEqual(answer, { revision: 9, id: "tx-1", results: [{}, {}] });
  const [call] = server.posts("/v1/transactions");
  assert.deepEqual(call.body, { operations: TRANSFER, id: "tx-1", expect: EXPECT });
  assert.equal(call.headers["Idempotency-Key"], "tx-1");
  assert.equal(call.headers["Obs-Client"], "teller");
  assert.equal(call.headers["Content-Type"], "application/json");
  assert.equal(call.headers.Authorization, "Bearer t");
});

test("without an id the body has neither id nor expect, and the write gets a key of its own", async () => {
  const server = new FakeServer({
    "POST /v1/transactions": async () => [200, { revision: 4, results: [{ id: "o1", class: null }, { delivered: 2 }] }],
  });
  const client = new ObsClient({ fetch: server.fetch });
  const operations = [{ op: "create", id: "o1" }, { op: "post", name: "Made", object: "o1" }];
  const answer = await client.transaction(operations);
  assert.deepEqual(answer.results, [{ id: "o1", class: null }, { delivered: 2 }]);
  assert.equal("id" in answer, false);
  await client.transaction(operations);
  const [first, second] = server.posts("/v1/transactions");
  assert.deepEqual(Object.keys(first.body), ["operations"]);
  assert.match(first.headers["Idempotency-Key"], /^[A-Za-z0-9_-]{24}$/);
  assert.notEqual(first.headers["Idempotency-Key"], second.headers["Idempotency-Key"], "each transaction is its own write");
});

test("a transaction retried after a 503 and a lost answer sends the same body with the same key", async () => {
  let attempts = 0;
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ body: init.body, key: init.headers["Idempotency-Key"] });
    attempts += 1;
    if (attempts === 1) {
      return new Response(JSON.stringify({ error: { code: "unavailable", message: "disk full", details: {} } }),
        { status: 503, headers: { "Content-Type": "application/json", "Retry-After": "0" } });
    }
    if (attempts === 2) throw new TypeError("connection reset");
    return json({ revision: 12, id: "tx-2", results: [{}, {}] });
  };
  const client = new ObsClient({ fetch, retries: 3 });
  const answer = await client.transaction(TRANSFER, { id: "tx-2" });
  assert.equal(answer.revision, 12);
  assert.equal(calls.length, 3);
  assert.deepEqual(new Set(calls.map((call) => call.key)), new Set(["tx-2"]));
  assert.deepEqual(new Set(calls.map((call) => call.body)).size, 1);
});

test("a refused operation rejects with its status, code and details.operation", async () => {
  const server = new FakeServer({
    "POST /v1/transactions": async (body) => {
      const index = body.operations.findIndex((operation) => operation.object === "missing");
      return refusal(404, "notFound", { operation: index });
    },
  });
  const client = new ObsClient({ fetch: server.fetch });
  const operations = [...TRANSFER, { op: "delete", object: "missing" }];
  await assert.rejects(client.transaction(operations, { id: "tx-3" }), (error) => {
    assert.ok(error instanceof ObsError);
    assert.equal(error.status, 404);
    assert.equal(error.code, "notFound");
    assert.equal(error.details.operation, 2);
    assert.equal(error.details.expect, undefined);
    assert.equal(String(error), "404 notFound: refused: notFound");
    return true;
  });
  assert.equal(server.posts("/v1/transactions").length, 1, "a refusal is not retried");
});

test("a condition that fails rejects with 412, details.expect and the object's revision", async () => {
  const server = new FakeServer({
    "POST /v1/transactions": async (body) => (body.expect.length > 1
      ? refusal(412, "conditionFailed", { expect: 1, revision: null })
      : refusal(412, "revisionMismatch", { expect: 0, revision: 7 })),
  });
  const client = new ObsClient({ fetch: server.fetch });
  await assert.rejects(
    client.transaction(TRANSFER, { expect: [...EXPECT, { object: "order-9", exists: true }] }),
    (error) => error.status === 412 && error.code === "conditionFailed"
      && error.details.expect === 1 && error.details.revision === null && error.details.operation === undefined,
  );
  await assert.rejects(
    client.transaction(TRANSFER, { expect: [{ object: "acct-1", ifRevision: 3 }] }),
    (error) => error.status === 412 && error.code === "revisionMismatch" && error.details.expect === 0 && error.details.revision === 7,
  );
});

test("a transaction too long for the server rejects with 429 limitExceeded and its limit", async () => {
  const server = new FakeServer({
    "POST /v1/transactions": async (body) => (body.operations.length > 100
      ? refusal(429, "limitExceeded", { limit: 100 })
      : [200, { revision: 1, results: body.operations.map(() => ({})) }]),
  });
  const client = new ObsClient({ fetch: server.fetch });
  const operations = Array.from({ length: 101 }, (_, n) => ({ op: "notify", object: `o${n}`, keyPaths: ["k"] }));
  await assert.rejects(client.transaction(operations),
    (error) => error.status === 429 && error.code === "limitExceeded" && error.details.limit === 100);
  assert.equal(server.posts("/v1/transactions").length, 1, "a 429 is not retried");
});

test("a 504 outcomeUnknown is repeated under the same key, which answers the real outcome; a read's 504 is not", async () => {
  const outcomeUnknown = () => new Response(
    JSON.stringify({ error: { code: "outcomeUnknown", message: "the commit's outcome is unknown", details: { outcome: "unknown" } } }),
    { status: 504, headers: { "Content-Type": "application/json", "Retry-After": "0" } });
  const keys = [];
  let reads = 0;
  const fetch = async (url, init) => {
    if (init.method === "GET") {
      reads += 1;
      return outcomeUnknown();
    }
    keys.push(init.headers["Idempotency-Key"]);
    return keys.length === 1 ? outcomeUnknown() : json({ revision: 21, id: "tx-5", results: [{}, {}] });
  };
  const client = new ObsClient({ fetch });
  assert.deepEqual(await client.transaction(TRANSFER, { id: "tx-5" }), { revision: 21, id: "tx-5", results: [{}, {}] });
  assert.deepEqual(keys, ["tx-5", "tx-5"]);
  await assert.rejects(client.getObject("acct-1"), (error) => error.status === 504 && error.code === "outcomeUnknown");
  assert.equal(reads, 1);
  // Retries are bounded: the last 504 is the answer.
  const stuck = new ObsClient({ retries: 2, fetch: async () => outcomeUnknown() });
  await assert.rejects(stuck.transaction(TRANSFER, { id: "tx-6" }),
    (error) => error.status === 504 && error.details.outcome === "unknown");
});
