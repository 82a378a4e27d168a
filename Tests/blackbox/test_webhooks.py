"""Deliveries to a URL (section 16), end to end: the real binary pushing to a receiver on loopback."""

import statistics
import threading
import time

import pytest

from conftest import EventStreamReader
from webhooks import Receiver, verify

HOSTS = ("--webhook-hosts", "127.0.0.1:*")


@pytest.fixture
def receivers():
    made = []

    def make(mode=204):
        receiver = Receiver(mode)
        made.append(receiver)
        return receiver

    yield make
    for receiver in made:
        receiver.stop()


def make_world(server, objects=("acct-1",)):
    for object_id in objects:
        status, _ = server.request("POST", "/v1/objects", {"id": object_id, "values": {"balance": 0}})
        assert status == 201


def delivering_observer(server, receiver, object_id="acct-1", **deliver):
    status, observer = server.request("POST", "/v1/observers", {"deliver": {"url": receiver.url, **deliver}})
    assert status == 201, observer
    status, _ = server.request("POST", f"/v1/observers/{observer['id']}/observations",
                               {"object": object_id, "keyPath": "balance", "options": ["new", "old"]})
    assert status == 201
    return observer


def set_balance(server, value, object_id="acct-1"):
    status, _ = server.request("PUT", f"/v1/objects/{object_id}/values/balance", {"value": value})
    assert status == 200


def delivery(server, observer_id):
    status, observer = server.request("GET", f"/v1/observers/{observer_id}")
    assert status == 200
    return observer["delivery"]


def wait_for_delivery(server, observer_id, predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = delivery(server, observer_id)
        if predicate(state):
            return state
        time.sleep(0.02)
    raise AssertionError(f"delivery state never matched: {state}")


def test_same_events_as_an_sse_observer_and_signed(server_factory, receivers):
    server = server_factory(*HOSTS).start()
    make_world(server)
    receiver = receivers(204)
    pushed = delivering_observer(server, receiver, maxBatch=7)
    status, streamed = server.request("POST", "/v1/observers", {"lease": 60})
    assert status == 201
    status, _ = server.request("POST", f"/v1/observers/{streamed['id']}/observations",
                               {"object": "acct-1", "keyPath": "balance", "options": ["new", "old"]})
    stream = EventStreamReader(server, f"/v1/observers/{streamed['id']}/events")
    for value in range(1, 41):
        set_balance(server, value)
    stream.wait_for(lambda event, event_id, data: event_id == 40)
    wait_for_delivery(server, pushed["id"], lambda state: state["acknowledged"] == 40)
    stream.close()

    received = receiver.snapshot()
    events = [event for request in received for event in request["json"]["events"]]
    sse = [(event, event_id, data) for event, event_id, data in stream.events if event_id]
    assert [int(event["id"]) for event in events] == list(range(1, 41))
    # The same records but for the registration's id (each observer has its own).
    strip = lambda data: {k: v for k, v in data.items() if k != "observation"}
    assert [(e["event"], strip(e["data"])) for e in events] == [(name, strip(data)) for name, _, data in sse]
    for request in received:
        assert request["json"]["observer"] == pushed["id"]
        assert 1 <= len(request["json"]["events"]) <= 7
        assert request["headers"]["content-type"] == "application/json"
        assert request["headers"]["webhook-id"] == f"{pushed['id']}:{request['json']['events'][-1]['id']}"
        assert abs(int(request["headers"]["webhook-timestamp"]) - time.time()) < 30
        assert verify(pushed["deliver"]["secret"], request["headers"], request["body"])
        assert not verify("whsec_" + "A" * 32, request["headers"], request["body"])
    state = delivery(server, pushed["id"])
    assert state["state"] == "idle" and state["backlog"] == 0 and state["lastStatus"] == 204
    assert "secret" not in state


def test_retries_keep_the_webhook_id_and_back_off(server_factory, receivers):
    server = server_factory(*HOSTS).start()
    make_world(server)
    receiver = receivers(lambda index: 500 if index < 4 else 204)
    observer = delivering_observer(server, receiver)
    set_balance(server, 1)
    receiver.wait_until(lambda requests: len(requests) >= 2)
    set_balance(server, 2)  # waits behind the failing batch
    state = wait_for_delivery(server, observer["id"], lambda state: state["state"] == "retrying")
    assert state["lastStatus"] == 500 and state["acknowledged"] == 0 and state["attempts"] >= 1
    assert state["nextAttemptAt"] is not None
    wait_for_delivery(server, observer["id"], lambda state: state["acknowledged"] == 2, timeout=15)
    requests = receiver.snapshot()
    first = [r for r in requests if r["headers"]["webhook-id"] == f"{observer['id']}:1"]
    assert len(first) == 5  # four 500s, then the 204
    assert len({r["body"] for r in first}) == 1
    gaps = [b["time"] - a["time"] for a, b in zip(first, first[1:])]
    for gap, base in zip(gaps, [0.5, 1.0, 2.0, 4.0]):
        assert base * 0.8 - 0.02 <= gap <= base * 1.2 + 0.25, (gaps, base)
    assert requests[-1]["headers"]["webhook-id"] == f"{observer['id']}:2"
    assert [e["id"] for e in requests[-1]["json"]["events"]] == ["2"]


@pytest.mark.parametrize("mode", ["hang", "close"])
def test_a_hung_or_closed_connection_is_retried(server_factory, receivers, mode):
    server = server_factory(*HOSTS).start()
    make_world(server)
    receiver = receivers(lambda index: mode if index == 0 else 200)
    observer = delivering_observer(server, receiver, timeout=1)
    set_balance(server, 1)
    state = wait_for_delivery(server, observer["id"], lambda state: state["acknowledged"] == 1, timeout=10)
    assert state["lastStatus"] == 200
    requests = receiver.snapshot()
    assert len(requests) == 2 and requests[0]["body"] == requests[1]["body"]
    assert requests[0]["headers"]["webhook-id"] == requests[1]["headers"]["webhook-id"]


def test_kill9_loses_nothing_and_resends_nothing_acknowledged(server_factory, receivers, tmp_path):
    data = tmp_path / "data"
    server = server_factory(*HOSTS, data_dir=data).start()
    make_world(server)
    receiver = receivers(204)
    observer = delivering_observer(server, receiver, maxBatch=5)
    for value in range(1, 31):
        set_balance(server, value)
    wait_for_delivery(server, observer["id"], lambda state: state["acknowledged"] == 30)
    time.sleep(0.5)  # the acknowledgement's command is written by now
    acknowledged_before = 30
    # Kill while the receiver fails: what is not acknowledged must come after the restart.
    receiver.mode = 500
    for value in range(31, 41):
        set_balance(server, value)
    receiver.wait_until(lambda requests: any(e["id"] == "31" for r in requests for e in r["json"]["events"]))
    server.kill()
    before = len(receiver.snapshot())
    receiver.mode = 204

    server.start()
    wait_for_delivery(server, observer["id"], lambda state: state["acknowledged"] == 40, timeout=15)
    after = receiver.snapshot()[before:]
    ids = [int(e["id"]) for r in after for e in r["json"]["events"]]
    assert ids == list(range(31, 41)), ids  # nothing acknowledged again, nothing lost
    assert all(r["json"]["events"][0]["event"] == "change" for r in after)
    everything = {int(e["id"]) for e in receiver.events()}
    assert everything == set(range(1, 41))
    assert min(ids) > acknowledged_before


def test_a_dead_endpoint_does_not_slow_a_healthy_one(server_factory, receivers):
    server = server_factory(*HOSTS).start()
    make_world(server, ("acct-1", "acct-2"))
    healthy = receivers(204)
    dead = receivers("hang")
    good = delivering_observer(server, healthy, "acct-1")

    def latencies(rounds):
        result = []
        for value in rounds:
            before = len(healthy.snapshot())
            start = time.monotonic()
            set_balance(server, value, "acct-1")
            set_balance(server, value, "acct-2")
            received = healthy.wait_until(lambda requests: len(requests) > before, timeout=5)
            result.append(received[before]["time"] - start)
            time.sleep(0.01)
        return result

    alone = latencies(range(1, 41))
    blocked = delivering_observer(server, dead, "acct-2", timeout=2)
    beside = latencies(range(41, 81))
    assert len(dead.snapshot()) >= 1
    assert delivery(server, blocked["id"])["state"] in ("sending", "retrying")
    assert wait_for_delivery(server, good["id"], lambda state: state["backlog"] == 0)
    # Within noise of the run without the dead endpoint: no wait on it, ever.
    assert max(beside) < 0.5, beside
    assert statistics.median(beside) < statistics.median(alone) * 3 + 0.02, (alone, beside)


def test_idle_deliveries_cost_no_cpu(server_factory, receivers):
    server = server_factory(*HOSTS).start()
    make_world(server)
    observers = [delivering_observer(server, receivers(204)) for _ in range(5)]
    set_balance(server, 1)
    for observer in observers:
        wait_for_delivery(server, observer["id"], lambda state: state["acknowledged"] == 1)
    time.sleep(0.5)

    def cpu_ticks():
        with open(f"/proc/{server.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    before = cpu_ticks()
    time.sleep(3)
    assert cpu_ticks() - before <= 2, "an idle server with delivering observers uses no CPU (ticks of 10 ms)"
