"""Deliveries to a URL on a cluster (section 16): one node delivers (the keeper, who holds the
PostgreSQL advisory lock); when it is killed another takes over from the acknowledged cursor."""

import time

import pytest

from cluster import Cluster, ok, wait_until
from webhooks import Receiver


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(size=2, node_args=["--webhook-hosts", "127.0.0.1:*"])
    yield cluster
    cluster.stop()


def metric(node, name):
    status, text = node.request("GET", "/metrics")
    assert status == 200
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name}")


def test_one_node_delivers_and_another_takes_over_from_the_acknowledged_cursor(cluster):
    receiver = Receiver(204)
    try:
        a, b = cluster.nodes
        ok(*a.request("POST", "/v1/objects", {"id": "acct-1", "values": {"balance": 0}}))
        observer = ok(*a.request("POST", "/v1/observers", {"deliver": {"url": receiver.url, "maxBatch": 5}}))["id"]
        ok(*b.request("POST", f"/v1/observers/{observer}/observations", {"object": "acct-1", "keyPath": "balance"}))
        for value in range(1, 21):
            ok(*cluster.nodes[value % 2].request("PUT", "/v1/objects/acct-1/values/balance", {"value": value}))
        acknowledged = lambda node: ok(*node.request("GET", f"/v1/observers/{observer}"))["delivery"]["acknowledged"]
        wait_until(lambda: acknowledged(a) == 20 and acknowledged(b) == 20, message="20 acknowledged on both nodes")
        active = [node for node in cluster.nodes if metric(node, "obs_webhook_active") == 1]
        assert len(active) == 1, "exactly one node delivers"
        ids = [int(e["id"]) for e in receiver.events()]
        assert ids == list(range(1, 21)), ids  # each once, in order
        time.sleep(0.5)
        before = len(receiver.snapshot())

        deliverer = active[0]
        other = b if deliverer is a else a
        deliverer.kill()
        killed = time.monotonic()
        for value in range(21, 31):
            ok(*other.request("PUT", "/v1/objects/acct-1/values/balance", {"value": value}))
        wait_until(lambda: acknowledged(other) == 30, timeout=15, message="the other node delivers")
        assert time.monotonic() - killed < 10, "taken over within 10 s"
        assert metric(other, "obs_webhook_active") == 1
        after = [int(e["id"]) for r in receiver.snapshot()[before:] for e in r["json"]["events"]]
        assert after == list(range(21, 31)), after  # from the acknowledged cursor: nothing again, nothing lost
        cluster.restart(cluster.nodes.index(deliverer))
    finally:
        receiver.stop()
