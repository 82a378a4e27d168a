// /client/obs.js over the wire module, with a fake fetch: paths are encoded by the one segment
// encoder, and an EventStream reads a body cut into chunks anywhere (a character split over two
// of them included) exactly as the server's stream.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ObsClient, ObsError } from "../../Public/client/obs.js";

/** A fetch that records each call and answers with `answer(url, init)`. */
function fakeFetch(answer) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    return answer(url, init);
  };
  return { fetch, calls };
}

const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

test("requests put ids and key paths into the path one encoded segment each", async () => {
  const { fetch, calls } = fakeFetch(() => json({ revision: 3 }));
  const client = new ObsClient({ fetch });
  await client.getObject("acct/1");
  await client.setValue("a b", "owner.@count", 1);
  await client.mutate("é", "tags", { kind: "insertion", indexes: [0], values: ["x"] });
  await client.observer("obs_1%").get();
  assert.deepEqual(calls.map((call) => call.url), [
    "/v1/objects/acct%2F1",
    "/v1/objects/a%20b/values/owner.%40count",
    "/v1/objects/%C3%A9/values/tags/mutations",
    "/v1/observers/obs_1%25",
  ]);
});

test(". and .. reject with an ObsError and send nothing", async () => {
  const { fetch, calls } = fakeFetch(() => json({}));
  const client = new ObsClient({ fetch });
  for (const attempt of [() => client.getObject(".."), () => client.getValue("x", ".."), () => client.deleteObject(".")]) {
    await assert.rejects(attempt(), (error) => error instanceof ObsError && error.status === 0 && error.code === "invalidName");
  }
  assert.throws(() => client.observer(".."), ObsError);
  assert.equal(calls.length, 0);
});

// A stream as the server sends it, with CR, CRLF and LF line ends: retry, a keep-alive, one
// revision's two records and its commit, then synced.
const STREAM = "retry: 2000\r\n"
  + ": keep-alive\r\n\r\n"
  + "id: 1\revent: change\rdata: {\"observation\":\"reg_1\",\"object\":\"a/b é\",\"keyPath\":\"name\",\r"
  + "data: \"kind\":\"setting\",\"new\":\"é😀\",\"revision\":5}\r\r"
  + "id: 2\r\nevent: change\r\ndata: {\"observation\":\"reg_2\",\"object\":\"a/b é\",\"keyPath\":\"n\",\"kind\":\"setting\",\"new\":2,\"revision\":5}\r\n\r\n"
  + "event: commit\ndata: {\"revision\":5}\n\n"
  + "event: synced\ndata: {\"lastEventId\":2,\"revision\":5}\n\n";

/** The stream's bytes in chunks of `size` bytes. */
function body(size) {
  const bytes = new TextEncoder().encode(STREAM);
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += size) controller.enqueue(bytes.slice(at, at + size));
      controller.close();
    },
  });
}

for (const size of [1, 2, 3, 5, 7, 64, 10000]) {
  test(`an EventStream reads a body in chunks of ${size} bytes: one batch per revision, then live`, async () => {
    const { fetch, calls } = fakeFetch(() => new Response(body(size), { headers: { "Content-Type": "text/event-stream" } }));
    const client = new ObsClient({ fetch, token: "t" });
    const batches = [];
    const states = [];
    const stream = await new Promise((resolve) => {
      const opened = client.observer("obs a/b", "observer-token").stream({
        onBatch: (batch) => batches.push(batch),
        onState: (state) => states.push(state),
        onSynced: () => {
          opened.close();
          resolve(opened);
        },
      });
    });
    assert.equal(calls.length, 1);
    assert.equal(calls[0].url, "/v1/observers/obs%20a%2Fb/events?commits=1");
    assert.equal(calls[0].init.headers.Accept, "text/event-stream");
    assert.equal(calls[0].init.headers.Authorization, "Bearer observer-token");
    assert.deepEqual(batches.map((batch) => [batch.revision, batch.events.map((event) => [event.event, event.id])]),
      [[5, [["change", 1], ["change", 2]]]]);
    assert.equal(batches[0].events[0].data.new, "é😀");
    assert.equal(stream.value("a/b é", "name"), "é😀");
    assert.equal(stream.lastEventId, 2);
    assert.equal(stream.retryMs, 2000);
    assert.deepEqual(states, ["connecting", "live", "closed"]);
  });
}
