"""Section 14 on a cluster (section 11): when the node holding a present client's stream dies
(`kill -9`), its streams are released, its lease runs out, and its owned object is deleted and its
`onRemove` patch applied in the revision that removes it, on every node alike."""

import time


from cluster import module_cluster, ok, wait_until
from conftest import EventStreamReader

LEASE = 2


cluster = module_cluster(size=2)


def test_a_node_death_removes_its_present_clients_in_one_revision_everywhere(cluster):
    a, b = cluster.nodes
    ok(*b.request("PUT", "/v1/classes/Presence", {"properties": {"user": {"type": "string"},
                                                                  "room": {"type": "string"}}}))
    ok(*b.request("POST", "/v1/objects", {"id": "lobby", "values": {"last": None}}))
    watcher = ok(*b.request("POST", "/v1/observers", {"lease": 600}), expected=(201,))["id"]
    ok(*b.request("POST", f"/v1/observers/{watcher}/queries",
                  {"class": "Presence", "where": [["room", "==", "r1"]], "select": ["user"], "options": ["new"]}),
       expected=(201,))
    records = EventStreamReader(b, f"/v1/observers/{watcher}/events")
    admin = EventStreamReader(b, "/v1/events")
    ann = ok(*a.request("POST", "/v1/observers", {"lease": LEASE, "onRemove": [
        {"object": "lobby", "values": {"last": "ann left"}}]}), expected=(201,))["id"]
    ok(*a.request("POST", "/v1/objects", {"id": "p-ann", "class": "Presence", "owner": ann,
                                          "values": {"user": "ann", "room": "r1"}}), expected=(201,))
    held = EventStreamReader(a, f"/v1/observers/{ann}/events")  # node a holds ann's lease
    records.wait_for(lambda name, _id, data: name == "query" and data["inserted"], timeout=10)
    time.sleep(LEASE + 0.5)  # the stream holds the lease: still present
    status, _ = b.request("GET", "/v1/objects/p-ann")
    assert status == 200, "a client whose stream is open never leaves"
    a.kill()
    held.close()
    _, _, leave = records.wait_for(lambda name, _id, data: name == "query" and data["removed"], timeout=30)
    assert [item["id"] for item in leave["removed"]] == ["p-ann"] and leave["total"] == 0
    revision = leave["revision"]
    wait_until(lambda: any(name == "valueChanged" and data["revision"] == revision for name, _, data in admin.events),
               timeout=5, message="the onRemove patch")
    same = [(name, data) for name, _, data in admin.events if data.get("revision") == revision]
    names = [name for name, _ in same]
    assert names[:2] == ["observerRemoved", "objectDeleted"] and "valueChanged" in names, names
    assert same[0][1]["observer"] == ann and same[0][1]["reason"] == "expired"
    status, body = b.request("GET", "/v1/objects/lobby/values/last")
    assert status == 200 and body["value"] == "ann left", body
    records.close()
    admin.close()
