"""Live queries of the JavaScript client (observer.query, /client/query.js) in chromium, against the real server.

The page keeps a query's window from its observer's stream; the server's `POST /v1/query` says what the
window is. They must agree after a kill and restart (the stream resumes with Last-Event-ID) and after a
resume that fell out of a tiny replay buffer (`reset`, and the rebuild's initial record).
"""

import http.client
import json
import random
import re
import threading
import time

from conftest import ROOT
from test_client import open_page, run, until

DEFINITION = {"class": "Order", "where": [["status", "==", "open"]], "orderBy": [["total", "desc"]], "limit": 5,
              "select": ["total", "status"]}

# The page's query, with a fetch that counts the snapshots (POST /v1/query) the client takes.
START_QUERY = """
window.snapshots = 0;
const counting = (url, init) => {
  if (String(url).endsWith("/v1/query")) snapshots += 1;
  return fetch(url, init);
};
const client = new obs.ObsClient({ fetch: counting });
const observer = await client.createObserver({ lease: 600, replay: arguments[1] });
window.seen = { changes: [], resets: [], cancels: [], errors: [] };
window.q = await observer.query(arguments[0], {
  onChange: (change) => seen.changes.push({ revision: change.revision, initial: change.initial, snapshot: change.record === null }),
  onReset: (info) => seen.resets.push(info),
  onCancel: (info) => seen.cancels.push(info),
  onError: (error) => seen.errors.push(String(error)),
});
Object.assign(window, { client, observer });
"""


def make_orders(server, count=12):
    status, answer = server.request("PUT", "/v1/classes/Order", {"properties": {
        "status": {"type": "string"}, "total": {"type": "number"}}})
    assert status in (200, 201), answer
    for n in range(count):
        status, answer = server.request("POST", "/v1/objects", {
            "id": f"o{n:02}", "class": "Order", "values": {"status": "open" if n % 3 else "closed", "total": n * 10}})
        assert status == 201, answer


def page_window(browser):
    """The page's live window: (members as [id, values], total)."""
    return browser.execute_script("return [q.members.map((m) => [m.id, m.values]), q.total]")


def server_window(server, definition=DEFINITION):
    status, answer = server.request("POST", "/v1/query", definition)
    assert status == 200, answer
    return [[o["id"], o["values"]] for o in answer["objects"]], answer["total"]


def agrees_with_server(browser, server, timeout=15):
    """Waits (bounded) until the page's window is the server's; returns it."""
    deadline = time.monotonic() + timeout
    while True:
        expected = server_window(server)
        got = page_window(browser)
        if [got[0], got[1]] == [expected[0], expected[1]]:
            return expected
        if time.monotonic() > deadline:
            raise AssertionError(f"the page's window {got} never became the server's {expected}")
        time.sleep(0.05)


def random_write(server, rng, connection=None):
    """A write that moves an order in or out of the window, or along it: a total or a status."""
    target = f"o{rng.randrange(12):02}"
    if rng.random() < 0.3:
        body = {"value": rng.choice(["open", "closed"])}
        return server.request("PUT", f"/v1/objects/{target}/values/status", body, connection=connection)
    return server.request("PUT", f"/v1/objects/{target}/values/total", {"value": rng.randrange(200)}, connection=connection)


def test_a_live_query_survives_a_kill_and_restart_from_its_records_alone(server_factory, browser, tmp_path):
    server = server_factory(data_dir=tmp_path / "data").start()
    make_orders(server)
    open_page(browser, server)
    run(browser, START_QUERY, DEFINITION, 100000)
    assert page_window(browser) == list(server_window(server))
    assert browser.execute_script("return q.id").startswith("qry_")

    rng = random.Random(7)
    stop = threading.Event()
    written = []

    def writer():
        while not stop.is_set():
            try:
                status, _ = random_write(server, rng)
                written.append(status)
            except (OSError, http.client.HTTPException):
                stop.wait(0.02)  # the server is down
            stop.wait(0.005)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(written) < 60 and time.monotonic() < deadline:
            time.sleep(0.01)
        until(browser, "seen.changes.length >= 5", message="the page saw no records before the kill")
        server.kill()
        until(browser, "observer.queryRouter.stream.state === 'reconnecting'")
        server.start()
        until(browser, "observer.queryRouter.stream.state === 'live'", timeout=30,
              message="the query's stream did not resume after the restart")
        after = len(written)
        deadline = time.monotonic() + 10
        while len(written) < after + 60 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert len(written) >= after + 60, "the writer did not get going again after the restart"

    members, total = agrees_with_server(browser, server)
    # The writes close orders as well as open them: the window is full only while 5 are open.
    assert len(members) == min(5, total)
    assert all(values["status"] == "open" for _, values in members)
    assert [values["total"] for _, values in members] == sorted((v["total"] for _, v in members), reverse=True)
    # Kept from the records alone: no reset, no repair from a snapshot, nothing cancelled.
    seen = browser.execute_script("return seen")
    assert seen["resets"] == [] and seen["cancels"] == [] and seen["errors"] == []
    assert browser.execute_script("return snapshots") == 0
    revisions = [change["revision"] for change in seen["changes"]]
    assert revisions == sorted(set(revisions)), "a revision was applied twice or out of order"


def test_a_resume_past_a_tiny_replay_buffer_rebuilds_the_window_from_the_reset(server_factory, browser):
    server = server_factory().start()
    make_orders(server)
    open_page(browser, server)
    run(browser, START_QUERY, DEFINITION, 4)
    assert page_window(browser) == list(server_window(server))

    # While the stream is away, more window changes than the observer's buffer holds.
    browser.execute_script("observer.queryRouter.stream.close()")
    connection = server.connection()
    for value in range(10):
        assert server.request("PUT", "/v1/objects/o01/values/total", {"value": 500 + value}, connection=connection)[0] == 200
        assert server.request("PUT", f"/v1/objects/o{2 + value % 9:02}/values/total", {"value": 300 - value},
                              connection=connection)[0] == 200
    assert server.request("PUT", "/v1/objects/o04/values/status", {"value": "closed"}, connection=connection)[0] == 200
    connection.close()
    browser.execute_script("observer.queryRouter.stream.open()")
    until(browser, "seen.resets.length === 1 && observer.queryRouter.stream.state === 'live'",
          message="the resume did not answer reset")
    members, _ = agrees_with_server(browser, server, timeout=5)
    assert members[0] == ["o01", {"total": 509, "status": "open"}]
    assert "o04" not in [member_id for member_id, _ in members]
    seen = browser.execute_script("return seen")
    assert seen["resets"][0]["reason"] == "gap"
    assert seen["changes"][-1]["initial"] is True and seen["changes"][-1]["snapshot"] is False, \
        "the window was not replaced by the rebuild's initial record"

    # Live again: the next record applies on top of the rebuilt window.
    assert server.request("PUT", "/v1/objects/o05/values/total", {"value": 10000})[0] == 200
    until(browser, "q.members[0].id === 'o05'")
    agrees_with_server(browser, server, timeout=5)
    assert browser.execute_script("return snapshots") == 0


def test_a_query_registered_twice_is_shared_and_closed_by_its_last_holder(server_factory, browser):
    server = server_factory().start()
    make_orders(server)
    open_page(browser, server)
    run(browser, START_QUERY, DEFINITION, 1024)
    run(browser, "window.q2 = await observer.query(arguments[0])", DEFINITION)
    assert browser.execute_script("return q2.id === q.id && q2.state === 'live'")
    assert browser.execute_script("return q2.members.map((m) => m.id)") == [m[0] for m in server_window(server)[0]]
    observer_id = browser.execute_script("return observer.id")
    queries = lambda: server.request("GET", f"/v1/observers/{observer_id}/queries")[1]["queries"]  # noqa: E731
    assert len(queries()) == 1

    run(browser, "await q.close()")
    assert len(queries()) == 1, "closing one holder removed the query the other still uses"
    assert server.request("PUT", "/v1/objects/o05/values/total", {"value": 10000})[0] == 200
    until(browser, "q2.members[0].id === 'o05'")
    run(browser, "await q2.close()")
    assert queries() == []
    # Without `initial`, the window comes from POST /v1/query, then from records of later revisions.
    run(browser, "window.q3 = await observer.query(arguments[0], { options: ['new'] })", DEFINITION)
    assert browser.execute_script("return snapshots") == 1
    assert server.request("PUT", "/v1/objects/o07/values/total", {"value": 20000})[0] == 200
    until(browser, "q3.members[0].id === 'o07'")
    expected = server_window(server)
    assert browser.execute_script("return [q3.members.map((m) => [m.id, m.values]), q3.total]") == \
        json.loads(json.dumps(list(expected)))


def test_the_readmes_live_query_example_runs_as_written(server_factory, browser):
    """The README's page of open orders, its markup and script exactly as written, stays current."""
    text = (ROOT / "README.md").read_text()
    example = re.search(r"```html\n(.*?)```", text[text.index("A live query (`observer.query`"):], re.S).group(1)
    script = re.search(r'<script type="module">(.*?)</script>', example, re.S).group(1)
    markup = re.sub(r'<!doctype html>|<script type="module">.*?</script>', "", example, flags=re.S)
    server = server_factory().start()
    make_orders(server)
    browser.get(server.url + "/healthz")
    browser.execute_script("""
        document.body.innerHTML = arguments[0];
        const script = document.createElement("script");
        script.type = "module";
        script.textContent = arguments[1];
        document.head.append(script);
    """, markup, script)
    listed = "[...document.querySelectorAll('#orders li')].map((item) => item.textContent).join('|')"
    open_orders = [f"o{n:02}: {n * 10}" for n in (11, 10, 8, 7, 5, 4, 2, 1)]
    until(browser, f"{listed} === {json.dumps('|'.join(open_orders))}",
          message="the example's list never showed the open orders")
    server.request("PUT", "/v1/objects/o01/values/total", {"value": 999})
    server.request("PUT", "/v1/objects/o11/values/status", {"value": "closed"})
    expected = ["o01: 999"] + [f"o{n:02}: {n * 10}" for n in (10, 8, 7, 5, 4, 2)]
    until(browser, f"{listed} === {json.dumps('|'.join(expected))}",
          message="the example's list did not follow the changes")
