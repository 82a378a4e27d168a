"""The JavaScript client (/client/obs.js) in a real browser (headless chromium), against the real server.

Each test loads a small page from the server that imports the client as any page would, drives it
with short scripts, and reads back what its streams delivered.
"""

import http.client
import threading
import time

from selenium.webdriver.support.ui import WebDriverWait

# The test page: the client, and a recorder of everything a stream tells.
PAGE = """
import * as obs from "/client/obs.js";
window.obs = obs;
window.record = (observer, options = {}) => {
  const seen = { batches: [], resets: [], synced: [], states: [], errors: [] };
  const stream = observer.stream({
    onBatch: (batch) => seen.batches.push(batch),
    onReset: (info) => seen.resets.push(info),
    onSynced: (info) => seen.synced.push(info),
    onState: (state) => seen.states.push(state),
    onError: (error) => seen.errors.push(String(error)),
    ...options,
  });
  return { seen, stream };
};
window.ready = true;
"""


def open_page(browser, server):
    """A page of the server's origin that has imported /client/obs.js (window.obs, window.record)."""
    browser.get(server.url + "/healthz")
    browser.execute_script("""
        document.documentElement.innerHTML = "<head><title>obs.js test</title></head><body></body>";
        const script = document.createElement("script");
        script.type = "module";
        script.textContent = arguments[0];
        document.head.append(script);
    """, PAGE)
    WebDriverWait(browser, 10, poll_frequency=0.02).until(lambda b: b.execute_script("return window.ready === true"))


def run(browser, body, *args, timeout=20):
    """Runs `body` as an async function in the page (its arguments as `args`); returns its value.
    A rejection fails the test with the error, unless the body catches it."""
    browser.set_script_timeout(timeout)
    result = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const args = Array.from(arguments).slice(0, -1);
        (async () => { %s })().then((value) => done({ value }), (error) => done({ error: String(error) }));
    """ % body, *args)
    assert "error" not in result, f"the page's script failed: {result['error']}"
    return result.get("value")


def until(browser, expression, timeout=10, message=None):
    """Waits (bounded) until the page's `expression` is truthy, and returns its value."""
    return WebDriverWait(browser, timeout, poll_frequency=0.02).until(
        lambda b: b.execute_script(f"return {expression}"), message or f"the page never had {expression}")


def changes(browser, name="seen"):
    """Every change record the stream delivered, in order: (id, record)."""
    return browser.execute_script(f"""
        return window.{name}.batches.flatMap((batch) => batch.events)
          .filter((event) => event.event === "change").map((event) => [event.id, event.data]);
    """)


def test_the_client_observes_with_kvo_options_and_delivers_each_revision_as_one_batch(server_factory, browser):
    server = server_factory().start()
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient();
        await client.createObject({ id: "acct-1", values: { balance: 100, owner: "ada", tags: ["a"] } });
        const observer = await client.createObserver({ name: "page" });
        await observer.observe("acct-1", ["balance", "owner"], { options: ["new", "old", "initial", "prior"] });
        await observer.observe("acct-1", "tags", { options: ["new", "initial"] });
        await observer.subscribe("Ping");
        Object.assign(window, { client, observer }, record(observer));
    """)
    until(browser, "seen.synced.length === 1 && stream.state === 'live'")

    # The initial records of one registration request: one revision, one batch.
    batches = browser.execute_script("return seen.batches")
    assert len(batches) == 2
    first = [event["data"] for event in batches[0]["events"]]
    assert [(r["keyPath"], r.get("initial"), r["new"]) for r in first] == [("balance", True, 100), ("owner", True, "ada")]
    assert "old" not in first[0] and batches[0]["revision"] == first[0]["revision"]

    set_answer = run(browser, "return client.setValue('acct-1', 'balance', 120)")
    patch_answer = run(browser, "return client.patch('acct-1', { balance: 130, owner: 'alan' })")
    run(browser, "await client.mutate('acct-1', 'tags', { kind: 'insertion', indexes: [1], values: ['b'] })")
    run(browser, "await client.postNotification('Ping', { object: 'acct-1', userInfo: { n: 1 } })")
    until(browser, "seen.batches.some((batch) => batch.events.some((event) => event.event === 'notification'))")

    by_revision = {batch["revision"]: batch["events"] for batch in browser.execute_script("return seen.batches")}
    # A set: the prior record (old only), then the record, in one batch.
    assert [(e["data"].get("prior"), e["data"].get("old"), e["data"].get("new")) for e in by_revision[set_answer["revision"]]] \
        == [(True, 100, None), (None, 100, 120)]
    # A PATCH of two keys: every prior record first, then every change, all one batch of one revision.
    patch = [e["data"] for e in by_revision[patch_answer["revision"]]]
    assert [(r["keyPath"], bool(r.get("prior"))) for r in patch] == \
        [("balance", True), ("owner", True), ("balance", False), ("owner", False)]
    assert {r["revision"] for r in patch} == {patch_answer["revision"]}
    assert (patch[2]["old"], patch[2]["new"], patch[3]["old"], patch[3]["new"]) == (120, 130, "ada", "alan")

    # The stream's view follows the records, to-many mutations included.
    view = browser.execute_script("return Object.fromEntries(stream.view)")
    assert view == {"acct-1/balance": 130, "acct-1/owner": "alan", "acct-1/tags": ["a", "b"]}
    notification = browser.execute_script(
        "return seen.batches.flatMap((b) => b.events).find((event) => event.event === 'notification').data")
    assert (notification["name"], notification["object"], notification["userInfo"]) == ("Ping", "acct-1", {"n": 1})

    # Event ids: 1, 2, 3, … each once; nothing but live events after `synced`.
    ids = [event_id for event_id, _ in changes(browser)]
    assert ids == list(range(1, len(ids) + 1))
    assert browser.execute_script("return stream.lastEventId") >= ids[-1]

    # An error is a rejected promise with the contract's error.
    error = run(browser, """
        try { await client.setValue("acct-1", "balance.x.y", 1); } catch (error) {
          return { name: error.name, status: error.status, code: error.code, message: error.message, text: String(error) };
        }
    """)
    assert error["name"] == "ObsError" and error["status"] == 400 and error["code"] == "invalidKeyPath", error
    assert error["message"] and error["text"].startswith("400 invalidKeyPath: ")
    missing = run(browser, "try { await client.getObject('nope'); } catch (error) { return [error.status, error.code]; }")
    assert missing == [404, "notFound"]


def test_a_kill_and_restart_loses_no_acknowledged_write_and_repeats_none(server_factory, browser, tmp_path):
    """SIGKILL in the middle of a stream of writes, restart on the same port: the page's client resumes
    with Last-Event-ID and ends up with every acknowledged write's record exactly once, in order.
    After a kill the server refills the replay buffer from its command log (docs/API.md, durability),
    so a resume from an id still in the buffer needs no reset: that is asserted too. (The buffer is made
    large: the client waits out the server's `retry:`, 2-5 s, and must not fall out of it meanwhile.)"""
    server = server_factory(data_dir=tmp_path / "data").start()
    assert server.request("POST", "/v1/objects", {"id": "counter", "values": {"n": 0}})[0] == 201
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient();
        const observer = await client.createObserver({ lease: 600, replay: 100000 });
        await observer.observe("counter", "n", { options: ["new"] });
        Object.assign(window, record(observer));
    """)
    until(browser, "seen.synced.length === 1")

    acknowledged, unknown = [], []
    stop = threading.Event()

    def writer():
        """Writes 1, 2, 3, … one at a time (at most 200/s); a write with no answer may or may not have been applied."""
        value = 0
        while not stop.is_set():
            value += 1
            try:
                status, _ = server.request("PUT", "/v1/objects/counter/values/n", {"value": value})
                (acknowledged if status == 200 else unknown).append(value)
                stop.wait(0.005)
            except (OSError, http.client.HTTPException):
                unknown.append(value)
                stop.wait(0.02)  # the server is down: try the next number a moment later

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(acknowledged) < 30 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acknowledged) >= 30, "the writer did not get going"
        until(browser, "seen.batches.length >= 10", message="the page saw no writes before the kill")
        server.kill()
        before_restart = len(acknowledged)
        until(browser, "stream.state === 'reconnecting'")
        server.start()
        until(browser, "seen.synced.length >= 2 && stream.state === 'live'", timeout=30,
              message="the client did not resume after the restart")
        deadline = time.monotonic() + 10
        while len(acknowledged) < before_restart + 30 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert len(acknowledged) >= before_restart + 30, "the writer did not get going again after the restart"
    last = acknowledged[-1]
    until(browser, f"stream.value('counter', 'n') === {last}", timeout=15,
          message=f"the client never saw the last acknowledged write ({last})")

    seen = changes(browser)
    ids = [event_id for event_id, _ in seen]
    values = [record["new"] for _, record in seen]
    assert ids == list(range(1, len(ids) + 1)), "event ids repeated or missing"
    assert values == sorted(set(values)), "a value arrived twice or out of order"
    assert set(acknowledged) <= set(values), f"acknowledged but never seen: {sorted(set(acknowledged) - set(values))}"
    assert set(values) <= set(acknowledged) | set(unknown), "a value nobody wrote"
    assert browser.execute_script("return seen.resets") == []
    assert browser.execute_script("return seen.errors") == []


def test_a_stream_that_saw_no_event_yet_resumes_from_where_it_started(server_factory, browser):
    server = server_factory().start()
    assert server.request("POST", "/v1/objects", {"id": "acct-1", "values": {"a": 0}})[0] == 201
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient();
        const observer = await client.createObserver({ replay: 4 });
        await observer.observe("acct-1", ["a"], { options: ["new"] });
        Object.assign(window, { client }, record(observer));
    """)
    until(browser, "seen.synced.length === 1")
    # synced {lastEventId: 0}: the stream starts after id 0, though it has not received an event.
    assert browser.execute_script("stream.close(); return stream.lastEventId") == 0
    for value in range(1, 11):
        assert server.request("PUT", "/v1/objects/acct-1/values/a", {"value": value})[0] == 200
    browser.execute_script("stream.open()")
    until(browser, "seen.synced.length === 2 && stream.state === 'live'")
    # Events 1-6 left the buffer while it was away: a reset and the rebuild, never a silent gap.
    resets = browser.execute_script("return seen.resets")
    assert len(resets) == 1 and resets[0]["reason"] == "gap"
    assert browser.execute_script("return Object.fromEntries(stream.view)") == {"acct-1/a": 10}


def test_a_resume_past_the_replay_buffer_rebuilds_the_view_from_the_reset(server_factory, browser):
    server = server_factory().start()
    assert server.request("POST", "/v1/objects", {"id": "acct-1", "values": {"a": 0, "b": 0}})[0] == 201
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient();
        const observer = await client.createObserver({ replay: 4 });
        await observer.observe("acct-1", ["a", "b"], { options: ["new"] });
        Object.assign(window, { client }, record(observer));
    """)
    until(browser, "seen.synced.length === 1")
    server.request("PUT", "/v1/objects/acct-1/values/a", {"value": 1})
    until(browser, "stream.value('acct-1', 'a') === 1")
    paused_at = browser.execute_script("stream.close(); return stream.lastEventId")

    # More writes than the observer's buffer holds, while the stream is away.
    for value in range(2, 12):
        key = "a" if value % 2 else "b"
        assert server.request("PUT", f"/v1/objects/acct-1/values/{key}", {"value": value})[0] == 200
    server.request("POST", "/v1/objects", {"id": "acct-2", "values": {"c": 5}})
    run(browser, "await client.setValue('acct-1', 'b', 12)")

    browser.execute_script("stream.open()")
    until(browser, "seen.synced.length === 2 && stream.state === 'live'")
    resets = browser.execute_script("return seen.resets")
    assert len(resets) == 1 and resets[0]["reason"] == "gap" and resets[0]["oldestAvailable"] > paused_at + 1
    rebuild = browser.execute_script("return seen.batches.at(-1)")
    assert rebuild["rebuild"] is True
    assert all(event["id"] is None and event["data"]["initial"] is True for event in rebuild["events"])
    values = server.request("GET", "/v1/objects/acct-1")[1]["values"]
    assert browser.execute_script("return Object.fromEntries(stream.view)") == \
        {"acct-1/a": values["a"], "acct-1/b": values["b"]} == {"acct-1/a": 11, "acct-1/b": 12}

    # After the rebuild the stream resumes where the rebuild ended: no second reset, live events apply.
    browser.execute_script("stream.close(); stream.open()")
    until(browser, "seen.synced.length === 3 && stream.state === 'live'")
    server.request("PUT", "/v1/objects/acct-1/values/a", {"value": 13})
    until(browser, "stream.value('acct-1', 'a') === 13")
    assert len(browser.execute_script("return seen.resets")) == 1
    ids = [event_id for event_id, _ in changes(browser) if event_id is not None]
    assert ids == sorted(set(ids)), "an event was delivered twice"


# A fetch for the page's client that records every request, and can lose an answer or fake a 503.
RECORDING_FETCH = """
window.requests = [];
window.trouble = {};  // "PUT" → "lose" (apply, then drop the answer) or "503" (never sent), once each
window.recordingFetch = async (url, init = {}) => {
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const entry = { method: init.method ?? "GET", url: String(url), headers };
  requests.push(entry);
  const mode = trouble[entry.method];
  delete trouble[entry.method];
  if (mode === "503") {
    return new Response(JSON.stringify({ error: { code: "unavailable", message: "try later", details: {} } }),
      { status: 503, headers: { "Retry-After": "0", "Content-Type": "application/json" } });
  }
  const response = await fetch(url, init);
  entry.replayed = response.headers.get("Idempotent-Replayed");
  entry.status = response.status;
  if (mode === "lose") {
    await response.text();
    throw new TypeError("the answer was lost");
  }
  return response;
};
"""


def start_recording_client(server_factory, browser):
    """A fresh server and a page whose client records (and can disturb) its requests; returns the server."""
    server = server_factory().start()
    open_page(browser, server)
    run(browser, RECORDING_FETCH + """
        const client = new obs.ObsClient({ fetch: recordingFetch, name: "tab-1" });
        await client.createObject({ id: "acct-1", values: { balance: 1 } });
        const observer = await client.createObserver();
        await observer.observe("acct-1", "balance", { options: ["new"] });
        Object.assign(window, { client }, record(observer));
    """)
    until(browser, "seen.synced.length === 1")
    return server


def test_writes_send_obs_client_and_an_idempotency_key_kept_across_retries(server_factory, browser):
    server = start_recording_client(server_factory, browser)
    run(browser, "trouble.PUT = 'lose'; trouble.PATCH = '503';")
    put = run(browser, "return client.setValue('acct-1', 'balance', 2)")
    patch = run(browser, "return client.patch('acct-1', { balance: 3 })")
    assert put["revision"] < patch["revision"]
    until(browser, "stream.value('acct-1', 'balance') === 3")
    run(browser, "await client.getObject('acct-1')")

    requests = browser.execute_script("return requests")
    writes = [r for r in requests if r["method"] not in ("GET", "HEAD")]
    assert all(r["headers"]["obs-client"] == "tab-1" for r in requests), requests
    assert all(1 <= len(r["headers"]["idempotency-key"]) <= 128 for r in writes)
    assert not any("idempotency-key" in r["headers"] for r in requests if r["method"] == "GET")
    # Each logical write has its own key; its retry (a lost answer, a 503) reuses it.
    puts = [r for r in writes if r["method"] == "PUT"]
    patches = [r for r in writes if r["method"] == "PATCH"]
    assert len(puts) == 2 and puts[0]["headers"]["idempotency-key"] == puts[1]["headers"]["idempotency-key"]
    assert len(patches) == 2 and patches[0]["headers"]["idempotency-key"] == patches[1]["headers"]["idempotency-key"]
    keys = [r["headers"]["idempotency-key"] for r in writes]
    assert len(set(keys)) == len(writes) - 2
    stream_request = next(r for r in requests if r["url"].endswith("/events?commits=1"))
    assert stream_request["headers"]["accept"] == "text/event-stream"
    assert stream_request["headers"]["obs-client"] == "tab-1"

    # Retries are bounded: a server that never answers ends in a rejected promise, status 0.
    failed = run(browser, """
        let attempts = 0;
        const dead = new obs.ObsClient({ retries: 2, fetch: async () => { attempts++; throw new TypeError("down"); } });
        try { await dead.setValue("acct-1", "balance", 9); } catch (error) { return [attempts, error.status, error.code]; }
    """)
    assert failed == [3, 0, "network"]
    # A client mistake is not retried.
    run(browser, "requests.length = 0; await client.setValue('nope', 'x', 1).catch(() => {})")
    assert len(browser.execute_script("return requests")) == 1


def test_a_write_retried_after_a_lost_answer_is_applied_once(server_factory, browser):
    start_recording_client(server_factory, browser)
    run(browser, "trouble.PUT = 'lose'")
    answer = run(browser, "return client.setValue('acct-1', 'balance', 2)")
    run(browser, "await client.setValue('acct-1', 'balance', 3)")
    until(browser, "stream.value('acct-1', 'balance') === 3")
    puts = [r for r in browser.execute_script("return requests") if r["method"] == "PUT"]
    assert [r["replayed"] for r in puts[:2]] == [None, "true"]
    records = [record for _, record in changes(browser)]
    assert [r["new"] for r in records] == [2, 3], "the retried write was applied twice"
    assert records[0]["revision"] == answer["revision"]


def test_records_name_the_client_whose_write_caused_them(server_factory, browser):
    server = start_recording_client(server_factory, browser)
    run(browser, "await client.setValue('acct-1', 'balance', 2)")
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 3})  # no Obs-Client
    until(browser, "stream.value('acct-1', 'balance') === 3")
    records = [record for _, record in changes(browser)]
    assert [(r["new"], r.get("by")) for r in records] == [(2, "tab-1"), (3, None)]


def test_skip_own_hides_the_clients_echo_and_throttle_folds_changes(server_factory, browser):
    server = server_factory().start()
    assert server.request("POST", "/v1/objects", {"id": "acct-1", "values": {"balance": 0, "n": 0}})[0] == 201
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient({ name: "tab-1" });
        const observer = await client.createObserver({ client: true });
        await observer.observe("acct-1", "balance", { options: ["new", "skipOwn"] });
        await observer.observe("acct-1", "n", { options: ["new", "old"], throttle: 500 });
        Object.assign(window, { client }, record(observer));
    """)
    until(browser, "seen.synced.length === 1")
    run(browser, "await client.setValue('acct-1', 'balance', 1)")  # its own: not heard
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 2}, headers={"Obs-Client": "someone-else"})
    connection = server.connection()
    started = time.monotonic()
    for value in range(1, 11):
        server.request("PUT", "/v1/objects/acct-1/values/n", {"value": value}, connection=connection)
    took = time.monotonic() - started
    connection.close()
    until(browser, "stream.value('acct-1', 'balance') === 2 && stream.value('acct-1', 'n') === 10", timeout=5)
    records = [record for _, record in changes(browser)]
    assert [(r["new"], r.get("by")) for r in records if r["keyPath"] == "balance"] == [(2, "someone-else")]
    folded = [(r["old"], r["new"]) for r in records if r["keyPath"] == "n"]
    assert folded[-1][1] == 10 and len(folded) < 10
    if took < 0.4:  # all ten inside one window: the first at once, the other nine folded into one
        assert folded == [(0, 1), (1, 10)]
