"""Section 15 on a cluster (section 11): a transaction is one row of the command log. Clients move
money through nginx over two nodes; one node is killed mid-stream; every transaction whose outcome
was in doubt is repeated with its id until known. The surviving node, and the killed one once
restarted, hold every acknowledged transfer, each whole, and the total is conserved. An id is one
key for the whole cluster, and a transaction's records on another node carry it."""

import pytest

from cluster import Cluster, ok
from conftest import Bank, EventStreamReader

CLIENTS = 6


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(size=2)
    yield cluster
    cluster.stop()


def test_a_node_killed_amid_transfer_transactions_leaves_each_whole_or_absent(cluster):
    bank = Bank()
    bank.open(cluster.balancer)
    killed, survivor = cluster.nodes
    bank.run(cluster.balancer, clients=CLIENTS, seconds_before=2.0, interrupt=killed.kill, seconds_after=2.0,
             repeat_in_doubt=True)
    assert len(bank.acknowledged) > 50, "the load did not get going"
    applied = bank.check(survivor)
    assert applied >= len(bank.acknowledged)
    restarted = cluster.restart(0)
    assert bank.check(restarted) == applied, "the restarted node holds the same transfers"


def test_a_repeated_transaction_id_applies_once_on_either_node(cluster):
    a, b = cluster.nodes
    ok(*a.request("POST", "/v1/objects", {"id": "twice", "values": {"n": 0}}), expected=(201,))
    body = {"id": "tx-twice", "operations": [{"op": "set", "object": "twice", "keyPath": "n", "value": 1},
                                             {"op": "create", "id": "twice-receipt"}]}
    first = ok(*a.request("POST", "/v1/transactions", body))
    assert b.request("POST", "/v1/transactions", body) == (200, first), "the same answer on the other node"
    status, answer = b.request("POST", "/v1/transactions", dict(body, operations=body["operations"][:1]))
    assert status == 409 and answer["error"]["code"] == "idempotencyKeyReused", (status, answer)
    assert ok(*b.request("GET", "/v1/stats"))["revision"] == first["revision"], "nothing applied twice"


def test_records_of_a_transaction_sent_to_one_node_carry_its_id_on_the_other(cluster):
    a, b = cluster.nodes
    for object_id in ("tx-a", "tx-b"):
        ok(*a.request("POST", "/v1/objects", {"id": object_id, "values": {"n": 0}}), expected=(201,))
    observer = ok(*a.request("POST", "/v1/observers", {"lease": 600}))["id"]
    for object_id in ("tx-a", "tx-b"):
        ok(*a.request("POST", f"/v1/observers/{observer}/observations",
                      {"object": object_id, "keyPath": "n", "options": ["new", "prior"]}))
    stream = EventStreamReader(a, f"/v1/observers/{observer}/events")
    revision = ok(*b.request("POST", "/v1/transactions", {"id": "tx-remote", "operations": [
        {"op": "set", "object": "tx-a", "keyPath": "n", "value": 1},
        {"op": "set", "object": "tx-b", "keyPath": "n", "value": 2}]}))["revision"]
    stream.wait_for(lambda event, _, data: data.get("object") == "tx-b" and "new" in data, timeout=10)
    records = [(data["object"], data.get("prior", False), data.get("new"), data.get("tx"))
               for event, _, data in list(stream.events) if event == "change" and data["revision"] == revision]
    assert records == [("tx-a", True, None, "tx-remote"), ("tx-b", True, None, "tx-remote"),
                       ("tx-a", False, 1, "tx-remote"), ("tx-b", False, 2, "tx-remote")], records
    stream.close()
