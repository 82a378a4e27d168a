"""Section 11: every write on a cluster node is answered within --commit-timeout, also when PostgreSQL
stops answering mid-commit (SIGSTOP) or the connection to it drops (a proxy killed): 503 `unavailable`
when the node knows the write was not applied, 504 `outcomeUnknown` when it cannot know. A repeat with
the same Idempotency-Key answers the real outcome once known and never applies twice. The timer
thread never waits on PostgreSQL: a waiting poll ends on time while the database is stopped."""

import http.client
import json
import socket
import threading
import time

import pytest

from cluster import ok, wait_until
from conftest import ServerProcess, free_port
from postgres import Postgres

COMMIT_TIMEOUT = 2
# Answers come at the deadline from a GCD timer; the slack covers scheduling on a loaded machine.
SLACK = 1.0


@pytest.fixture
def postgres():
    server = Postgres(free_port()).start()
    yield server
    server.remove()


def start_node(url, name="n1", commit_timeout=COMMIT_TIMEOUT):
    return ServerProcess("--cluster", url, "--node-id", name, "--heartbeat-interval", "1", "--commit-timeout",
                         str(commit_timeout)).start(timeout=30)


def call(node, method, path, body=None, key=None, timeout=30):
    """One request with an optional Idempotency-Key; returns (status, JSON body, headers, seconds taken)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    connection = http.client.HTTPConnection(node.host, node.port, timeout=timeout)
    started = time.monotonic()
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None, dict(response.getheaders()), \
            time.monotonic() - started
    finally:
        connection.close()


def in_thread(function, *args):
    """Runs `function(*args)` in a thread; returns the thread and where its result lands."""
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", function(*args)))
    thread.start()
    return thread, result


def insert(tag):
    return {"kind": "insertion", "indexes": [0], "values": [tag]}


def repeat_until_known(node, path, body, key, limit=20):
    """Repeats a write with its key while the node answers 503/504 (bounded); returns the last answer."""
    deadline = time.monotonic() + limit
    while True:
        answer = call(node, "POST", path, body, key=key)
        if answer[0] not in (503, 504) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def assert_outcome_unknown(answer):
    """504 `outcomeUnknown` whose details say so, in time."""
    status, body, headers, seconds = answer
    assert status == 504 and body["error"]["code"] == "outcomeUnknown", (status, body)
    assert body["error"]["details"]["outcome"] == "unknown", body
    assert "Idempotency-Key" in body["error"]["message"], "the answer says a repeat is safe"
    assert seconds < COMMIT_TIMEOUT + SLACK, f"answered in {seconds:.2f} s"


def assert_unavailable(answer):
    """503 `unavailable` with Retry-After, in time."""
    status, body, headers, seconds = answer
    assert status == 503 and body["error"]["code"] == "unavailable", (status, body)
    assert headers.get("Retry-After") == "1"
    assert seconds < COMMIT_TIMEOUT + SLACK, f"answered in {seconds:.2f} s"


def test_postgres_stopped_mid_commit_answers_504_and_the_repeat_applies_once(postgres):
    node = start_node(postgres.url)
    try:
        ok(*node.request("POST", "/v1/objects", {"id": "o", "values": {"tags": []}}))
        path = "/v1/objects/o/values/tags/mutations"
        postgres.pause()
        try:
            # Sent to a server that answers nothing: the node cannot know whether it was applied.
            first, first_result = in_thread(call, node, "POST", path, insert("k1"), "stop-1")
            # A read waits for the node to catch up with the log, at most the commit timeout.
            read, read_result = in_thread(call, node, "GET", "/v1/objects/o")
            time.sleep(0.3)
            # Queued behind it, never sent: the node knows it was not applied.
            second = call(node, "POST", path, insert("k2"), key="stop-2")
            first.join(timeout=10)
            read.join(timeout=10)
            assert_outcome_unknown(first_result["value"])
            assert_unavailable(second)
            assert_unavailable(read_result["value"])
        finally:
            postgres.resume()
        status, body, headers, _ = repeat_until_known(node, path, insert("k1"), "stop-1")
        assert status == 200, (status, body)
        status, body, headers, _ = repeat_until_known(node, path, insert("k2"), "stop-2")
        assert status == 200 and "Idempotent-Replayed" not in headers, "503 meant not applied: applied now"
        tags = ok(*node.request("GET", "/v1/objects/o"))["values"]["tags"]
        assert sorted(tags) == ["k1", "k2"], "each write applied exactly once"
        again = call(node, "POST", path, insert("k1"), key="stop-1")
        assert again[0] == 200 and again[2].get("Idempotent-Replayed") == "true"
        assert ok(*node.request("GET", "/v1/objects/o"))["values"]["tags"] == tags
    finally:
        node.stop()


class Proxy:
    """A TCP proxy from a loopback port to PostgreSQL. `hold_appends`: the answer to the log's
    append is never passed on (the commit is made; the node never hears of it); `drop_appends`:
    the append itself never reaches PostgreSQL. `kill`: every connection is closed and the port
    too, until `start` again."""

    def __init__(self, target):
        self.target = target
        self.port = free_port()
        self.hold_appends = False
        self.drop_appends = False
        self.held = threading.Event()
        self.lock = threading.Lock()
        self.sockets = []
        self.listener = None

    @property
    def url(self):
        return f"postgres://obs@127.0.0.1:{self.port}/postgres"

    def start(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def kill(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # stops listening now (a close would wait for its accept)
            self.listener.close()
        except OSError:
            pass  # killed already
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes its pump (a close alone would wait for its recv)
                sock.close()
            except OSError:
                pass

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return
            with self.lock:
                self.sockets += [client, server]
            state = {"held": False}
            threading.Thread(target=self._pump, args=(client, server, state, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, state, False), daemon=True).start()

    def _pump(self, source, sink, state, upstream):
        try:
            while data := source.recv(65536):
                if not upstream and state["held"]:
                    continue
                if upstream and self.drop_appends and b"INSERT INTO obs_log" in data:
                    state["held"] = True  # PostgreSQL never sees it
                    self.held.set()
                    continue
                sink.sendall(data)
                if upstream and self.hold_appends and b"INSERT INTO obs_log" in data:
                    state["held"] = True  # PostgreSQL has the append: its answer goes no further
                    self.held.set()
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_a_connection_dropped_mid_commit_answers_in_time_and_the_repeat_applies_once(postgres):
    proxy = Proxy(postgres.port).start()
    node = start_node(proxy.url)
    try:
        ok(*node.request("POST", "/v1/objects", {"id": "o", "values": {"tags": []}}))
        path = "/v1/objects/o/values/tags/mutations"
        proxy.hold_appends = True
        first, first_result = in_thread(call, node, "POST", path, insert("k1"), "drop-1")
        assert proxy.held.wait(timeout=5), "the append went through the proxy"
        proxy.kill()  # committed in PostgreSQL; its answer never reaches the node
        first.join(timeout=10)
        assert_outcome_unknown(first_result["value"])
        # With PostgreSQL out of reach, a write is known not to be applied.
        assert_unavailable(call(node, "POST", path, insert("k2"), key="drop-2"))

        proxy.hold_appends = False
        proxy.start()
        wait_until(lambda: node.request("GET", "/healthz")[0] == 200, timeout=20, message="the node rejoining")
        status, body, headers, _ = repeat_until_known(node, path, insert("k1"), "drop-1")
        assert status == 200 and headers.get("Idempotent-Replayed") == "true", \
            "the first was committed: the repeat answers its outcome"
        status, body, headers, _ = repeat_until_known(node, path, insert("k2"), "drop-2")
        assert status == 200 and "Idempotent-Replayed" not in headers, "503 meant not applied: applied now"
        assert sorted(ok(*node.request("GET", "/v1/objects/o"))["values"]["tags"]) == ["k1", "k2"], \
            "each write applied exactly once"
    finally:
        node.stop()
        proxy.kill()


def test_a_waiting_poll_ends_on_time_while_postgres_is_stopped(postgres):
    # A long commit timeout: a timer that waited for the database would end the poll seconds late.
    node = start_node(postgres.url, commit_timeout=5)
    try:
        expiring = ok(*node.request("POST", "/v1/observers", {"lease": 1}))["id"]
        observer = ok(*node.request("POST", "/v1/observers", {"lease": 60}))["id"]
        poll, poll_result = in_thread(call, node, "GET", f"/v1/observers/{observer}/events?wait=3")
        time.sleep(0.3)  # the poll has passed its read barrier and waits
        postgres.pause()
        try:
            # The keeper's timer expires `expiring`'s lease meanwhile, through the stopped database.
            poll.join(timeout=15)
            status, body, _, seconds = poll_result["value"]
            assert status == 200 and body["events"] == [], (status, body)
            assert 2.5 < seconds < 3 + SLACK, f"the 3 s poll ended after {seconds:.2f} s"
            assert node.request("GET", "/healthz")[0] == 200, "/healthz does not wait on the database"
        finally:
            postgres.resume()
        wait_until(lambda: node.request("GET", f"/v1/observers/{expiring}")[0] == 404, timeout=15,
                   message="the lease expiring once the database answers")
    finally:
        node.stop()


@pytest.mark.parametrize("lost", ["answer", "append"])
@pytest.mark.parametrize("kind", ["write", "transaction"])
def test_a_repeat_on_another_node_while_the_first_is_in_doubt_applies_once(postgres, lost, kind):
    """The first node cannot learn the outcome (its link to PostgreSQL is gone); the client
    repeats on another node at once: the log decides the key once for the whole cluster. A
    transaction's key is its id (section 15)."""
    proxy = Proxy(postgres.port).start()
    first_node = start_node(proxy.url, "n1")
    other = start_node(postgres.url, "n2")
    try:
        ok(*first_node.request("POST", "/v1/objects", {"id": "o", "values": {"tags": []}}))
        path, request, key = "/v1/objects/o/values/tags/mutations", insert("k1"), "both-1"
        if kind == "transaction":
            path, key = "/v1/transactions", None
            request = {"id": "both-1", "operations": [{"op": "mutate", "object": "o", "keyPath": "tags", **request}]}
        proxy.hold_appends = lost == "answer"
        proxy.drop_appends = lost == "append"
        first, first_result = in_thread(call, first_node, "POST", path, request, key)
        assert proxy.held.wait(timeout=5), "the append went through the proxy"
        proxy.kill()
        first.join(timeout=10)
        assert_outcome_unknown(first_result["value"])

        status, body, headers, _ = repeat_until_known(other, path, request, key)
        assert status == 200, (status, body)
        if lost == "answer":
            assert headers.get("Idempotent-Replayed") == "true", "the first was committed: its answer"
        else:
            assert "Idempotent-Replayed" not in headers, "the first never reached the log: applied now"

        proxy.hold_appends = proxy.drop_appends = False
        proxy.start()
        wait_until(lambda: first_node.request("GET", "/healthz")[0] == 200, timeout=20, message="n1 rejoining")
        # A write through n1's appender once it has resolved its doubt: nothing of the first follows.
        status, body, _, _ = repeat_until_known(first_node, "/v1/objects/o/values/tags/mutations", insert("after"),
                                                "both-after")
        assert status == 200, (status, body)
        for node in (first_node, other):
            tags = ok(*node.request("GET", "/v1/objects/o"))["values"]["tags"]
            assert sorted(tags) == ["after", "k1"], f"applied once, on every node: {tags}"
    finally:
        first_node.stop()
        other.stop()
        proxy.kill()
