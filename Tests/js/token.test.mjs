// Scoped tokens in /client/obs.js (contract 13), with a fake fetch: a token function is asked
// again after a 401 "expired" and before a JWT's exp, a string token is sent as it always was,
// and a stream whose token is revoked stops and says so instead of reconnecting.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ObsClient, jwtExpiry } from "../../Public/client/obs.js";
import { renewDelay } from "../../Public/client/token.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const refused = (reason) => json({ error: { code: "unauthorized", message: `the token was ${reason}`, details: { reason } } }, 401);
const bearerOf = (init) => init.headers.Authorization?.slice("Bearer ".length) ?? null;

/** A fetch that records each call and answers with `answer(url, init, n)` (n: the call's index). */
function fakeFetch(answer) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init, bearer: bearerOf(init) });
    return answer(url, init, calls.length - 1);
  };
  return { fetch, calls };
}

/** An SSE answer with `text`; ended after it unless `open` (then only when the request is aborted). */
function sse(text, init, { open = false } = {}) {
  const body = new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      if (!open) controller.close();
      init.signal?.addEventListener("abort", () => controller.error(new DOMException("aborted", "AbortError")));
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

/** An unsigned JWT whose payload is `claims` (the client never verifies; the server does). */
function jwt(claims) {
  const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}.c2lnbmF0dXJl`;
}

/** A token function that hands out `tokens` in turn (the last one again when they run out). */
function tokenFunction(...tokens) {
  const asked = [];
  const give = async () => {
    const token = tokens[Math.min(asked.length, tokens.length - 1)];
    asked.push(token);
    return token;
  };
  return { give, asked };
}

test("a string token is sent as it is, and a 401 expired is not retried", async () => {
  const { fetch, calls } = fakeFetch((url) => (url.endsWith("/old") ? refused("expired") : json({ revision: 1 })));
  const client = new ObsClient({ fetch, token: "secret" });
  await client.setValue("a", "b", 1);
  await assert.rejects(client.getObject("old"), (error) => error.status === 401 && error.details.reason === "expired");
  assert.deepEqual(calls.map((call) => call.bearer), ["secret", "secret"]);
  assert.equal(client.renewsToken, false);
  assert.equal(client.headers().Authorization, "Bearer secret");
});

test("a token function is asked once, then again after a 401 expired; the request is retried once", async () => {
  const tokens = tokenFunction("t1", "t2");
  const { fetch, calls } = fakeFetch((url, init) => (bearerOf(init) === "t1" ? refused("expired") : json({ revision: 7 })));
  const client = new ObsClient({ fetch, token: tokens.give });
  assert.deepEqual(await client.setValue("a", "b", 1), { revision: 7 });
  assert.deepEqual(tokens.asked, ["t1", "t2"]);
  assert.deepEqual(calls.map((call) => call.bearer), ["t1", "t2"]);
  // Still one write: the retry carries the same Idempotency-Key.
  assert.equal(calls[0].init.headers["Idempotency-Key"], calls[1].init.headers["Idempotency-Key"]);
  await client.getObject("a");
  assert.deepEqual(tokens.asked, ["t1", "t2"], "the new token is held, not asked for per request");
});

test("requests refused together ask for one new token; a revoked token is final", async () => {
  const tokens = tokenFunction("t1", "t2");
  const { fetch, calls } = fakeFetch((url, init) => {
    if (url.endsWith("/gone")) return refused("revoked");
    return bearerOf(init) === "t1" ? refused("expired") : json({});
  });
  const client = new ObsClient({ fetch, token: tokens.give });
  await client.bearer(); // t1 held
  await Promise.all([client.getObject("a"), client.getObject("b"), client.getObject("c")]);
  assert.deepEqual(tokens.asked, ["t1", "t2"]);
  await assert.rejects(client.getObject("gone"), (error) => error.status === 401 && error.details.reason === "revoked");
  assert.deepEqual(tokens.asked, ["t1", "t2"], "revoked: no new token is asked for");
  assert.equal(calls.filter((call) => call.url.endsWith("/gone")).length, 1);
});

test("a function that gives the same expired token again ends in the 401", async () => {
  const tokens = tokenFunction("t1");
  const { fetch, calls } = fakeFetch(() => refused("expired"));
  const client = new ObsClient({ fetch, token: tokens.give });
  await assert.rejects(client.getObject("a"), (error) => error.status === 401);
  assert.equal(calls.length, 1);
  assert.deepEqual(tokens.asked, ["t1", "t1"]);
});

test("a JWT's exp is read without verifying; the renewal comes 30 s before it, or at 80% of a short life", () => {
  assert.equal(jwtExpiry(jwt({ exp: 1700000000, obs: { scopes: [{ allow: ["read"], names: "é?>>" }] } })), 1700000000000);
  assert.equal(jwtExpiry("obs_st_0123"), null);
  assert.equal(jwtExpiry("a.b.c"), null);
  assert.equal(jwtExpiry(jwt({ sub: "no exp" })), null);
  assert.equal(renewDelay(1_000_000 + 600_000, 1_000_000), 570_000);
  assert.equal(renewDelay(1_000_000 + 60_000, 1_000_000), 48_000);
  assert.equal(renewDelay(1_000_000 + 500, 1_000_000), null, "too late: the 401 renews it");
});

test("a token function's JWT is renewed before its exp, without a request asking", async () => {
  const soon = () => jwt({ exp: Math.floor(Date.now() / 1000) + 3, jti: "s1" });
  const asked = [];
  const { fetch, calls } = fakeFetch(() => json({}));
  const client = new ObsClient({ fetch, token: () => { asked.push(Date.now()); return soon(); } });
  await client.getObject("a");
  assert.equal(asked.length, 1);
  const expiry = jwtExpiry(calls[0].bearer);
  await sleep(expiry - Date.now() - 150); // 80% of a 2–3 s life has passed by now
  assert.equal(asked.length, 2, "asked again before the exp");
  assert.ok(asked[1] < expiry);
  client.token = null; // stops the renewal timer
  await client.getObject("b");
  assert.equal(calls.at(-1).bearer, null);
});

test("client.token can be replaced; renewToken() asks the function again", async () => {
  let current = "one";
  const { fetch, calls } = fakeFetch(() => json({}));
  const client = new ObsClient({ fetch, token: () => current });
  await client.getObject("a");
  current = "two";
  await client.getObject("a");
  await client.renewToken();
  await client.getObject("a");
  client.token = "three";
  await client.getObject("a");
  assert.deepEqual(calls.map((call) => call.bearer), ["one", "one", "two", "three"]);
});

const SYNCED = "retry: 1000\n\nid: 4\nevent: change\ndata: {\"observation\":\"r\",\"object\":\"o\",\"keyPath\":\"k\",\"kind\":\"setting\",\"new\":1,\"revision\":9}\n\n"
  + "event: commit\ndata: {\"revision\":9}\n\nevent: synced\ndata: {\"lastEventId\":4,\"revision\":9}\n\n";
const REVOKED = (reason) => `event: revoked\ndata: {"reason":"${reason}","token":"tok_1"}\n\n`;

/** The stream's handlers recording what they hear. */
function recorder() {
  const seen = { revoked: [], errors: [], states: [], changes: [] };
  const handlers = {
    onRevoked: (info) => seen.revoked.push(info),
    onError: (error) => seen.errors.push([error.status, error.details.reason]),
    onState: (state) => seen.states.push(state),
    onChange: (record) => seen.changes.push(record.new),
  };
  return { seen, handlers };
}

test("a revoked stream stops and says so: onRevoked, onError, no reconnect", async () => {
  const { fetch, calls } = fakeFetch((url, init) => sse(SYNCED + REVOKED("revoked"), init));
  const client = new ObsClient({ fetch, token: "scoped" });
  const { seen, handlers } = recorder();
  const stream = client.adminStream(handlers);
  await sleep(1600); // past the reconnect backoff (1–1.5 s) it would have used
  assert.equal(calls.length, 1);
  assert.equal(stream.state, "closed");
  assert.deepEqual(seen.revoked, [{ reason: "revoked", token: "tok_1" }]);
  assert.deepEqual(seen.errors, [[401, "revoked"]]);
  assert.deepEqual(seen.changes, [1]);
});

test("an expired stream with a string token stops too; a 401 revoked on connect is final", async () => {
  const expired = fakeFetch((url, init) => sse(REVOKED("expired"), init));
  const first = recorder();
  new ObsClient({ fetch: expired.fetch, token: "scoped" }).observer("obs_1", "otok").stream(first.handlers);
  const gone = fakeFetch(() => refused("revoked"));
  const second = recorder();
  new ObsClient({ fetch: gone.fetch, token: () => "t" }).adminStream(second.handlers);
  await sleep(1600);
  assert.equal(expired.calls.length, 1);
  assert.deepEqual(first.seen.revoked, [{ reason: "expired", token: "tok_1" }]);
  assert.equal(gone.calls.length, 1);
  assert.deepEqual(second.seen.revoked, [{ reason: "revoked", token: null }]);
  assert.deepEqual(second.seen.errors, [[401, "revoked"]]);
});

test("a stream on a token function resumes after `revoked` expired with a new token, from its last event", async () => {
  const tokens = tokenFunction("t1", "t2");
  const { fetch, calls } = fakeFetch((url, init, n) => (n === 0 ? sse(SYNCED + REVOKED("expired"), init) : sse(SYNCED, init, { open: true })));
  const client = new ObsClient({ fetch, token: tokens.give });
  const { seen, handlers } = recorder();
  const stream = client.adminStream(handlers);
  await sleep(200);
  assert.deepEqual(calls.map((call) => call.bearer), ["t1", "t2"]);
  assert.equal(calls[1].init.headers["Last-Event-ID"], "4");
  assert.deepEqual(seen.revoked, []);
  assert.deepEqual(seen.changes, [1], "the replayed event is not delivered twice");
  assert.equal(stream.state, "live");
  stream.close();
});

test("…but only once: a new token that is refused too ends it, with the revocation reported", async () => {
  const tokens = tokenFunction("t1", "t2");
  const { fetch, calls } = fakeFetch((url, init, n) => (n === 0 ? sse(REVOKED("expired"), init)
    : json({ error: { code: "forbidden", message: "this token may not use observer 'obs_1'", details: {} } }, 403)));
  const client = new ObsClient({ fetch, token: tokens.give });
  const { seen, handlers } = recorder();
  const observer = client.observer("obs_1");
  const stream = observer.stream(handlers);
  await sleep(1600);
  assert.equal(calls.length, 2);
  assert.deepEqual(seen.revoked, [{ reason: "expired", token: "tok_1" }]);
  assert.deepEqual(seen.errors, [[403, undefined]]);
  assert.equal(stream.state, "closed");
});

test("observers made with a token function use the client's token; with a string, their own", async () => {
  const answer = (url) => (url === "/v1/observers" ? json({ id: "obs_1", token: "observer-token" }, 201) : json({}));
  const renewing = fakeFetch(answer);
  const viaFunction = await new ObsClient({ fetch: renewing.fetch, token: () => "jwt" }).createObserver();
  await viaFunction.keepalive();
  assert.equal(viaFunction.token, "observer-token");
  assert.equal(renewing.calls.at(-1).bearer, "jwt");
  const fixed = fakeFetch(answer);
  const viaString = await new ObsClient({ fetch: fixed.fetch, token: "scoped" }).createObserver();
  await viaString.keepalive();
  assert.equal(fixed.calls.at(-1).bearer, "observer-token");
});

test("client.tokens: create, list, get, change, revoke", async () => {
  const { fetch, calls } = fakeFetch((url, init) => {
    if (init.method === "DELETE") return new Response(null, { status: 204 });
    if (init.method === "GET" && url === "/v1/tokens") return json({ tokens: [{ id: "tok_1" }] });
    return json({ id: "tok_1", token: init.method === "POST" ? "obs_st_x" : undefined }, init.method === "POST" ? 201 : 200);
  });
  const client = new ObsClient({ fetch, token: "admin" });
  const made = await client.tokens.create({ name: "alice", scopes: [{ allow: ["read"], class: "Doc" }], ttl: 60 });
  assert.equal(made.token, "obs_st_x");
  assert.deepEqual(await client.tokens.list(), [{ id: "tok_1" }]);
  await client.tokens.get("tok_1");
  await client.tokens.change("tok_1", { ttl: null });
  assert.equal(await client.tokens.revoke("jwt:a b"), null);
  assert.deepEqual(calls.map((call) => `${call.init.method} ${call.url}`), [
    "POST /v1/tokens", "GET /v1/tokens", "GET /v1/tokens/tok_1", "PATCH /v1/tokens/tok_1", "DELETE /v1/tokens/jwt%3Aa%20b",
  ]);
  assert.deepEqual(JSON.parse(calls[3].init.body), { ttl: null });
});
