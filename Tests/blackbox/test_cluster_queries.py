"""Section 12 on a cluster (section 11): every node computes the same query records, byte for byte,
and a query's stream resumed on another node after `kill -9` goes on without a gap or a duplicate."""

import json
import random
import threading
import time

import pytest

from cluster import Cluster, RawStream, ok, wait_until


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(size=3, node_args=["--checkpoint-commands", "100"])
    yield cluster
    cluster.stop()


QUERY = {"class": "Card", "where": [["group", "==", "g1"], ["owner.team", "in", ["red", "blue"]]],
         "orderBy": [["rank", "desc"], ["owner.name", "asc"]], "limit": 5, "select": ["rank", "owner.name"],
         "options": ["initial", "new", "old"]}


def populate(balancer, tag):
    ok(*balancer.request("PUT", "/v1/classes/Player", {"properties": {"name": {"type": "string"},
                                                                      "team": {"type": "string"}}}))
    ok(*balancer.request("PUT", "/v1/classes/Card", {"properties": {
        "group": {"type": "string"}, "rank": {"type": "number"}, "owner": {"type": "ref", "class": "Player"}}}))
    for index in range(4):
        ok(*balancer.request("POST", "/v1/objects", {"id": f"{tag}p{index}", "class": "Player",
                                                     "values": {"name": f"P{index}", "team": "red"}}))
    for index in range(12):
        ok(*balancer.request("POST", "/v1/objects", {
            "id": f"{tag}c{index}", "class": "Card",
            "values": {"group": "g1" if index % 3 else "g2", "rank": index,
                       "owner": {"$ref": f"{tag}p{index % 4}"}}}))


def writer(balancer, tag, chance, stop, written):
    """Moves cards in and out of the window, regroups them, repoints and renames their owners."""
    connection = balancer.connection()
    n = 0
    while not stop.is_set():
        n += 1
        card, player = f"{tag}c{chance.randrange(12)}", f"{tag}p{chance.randrange(4)}"
        move = chance.randrange(5)
        if move == 0:
            request = ("PUT", f"/v1/objects/{card}/values/group", {"value": chance.choice(["g1", "g2"])})
        elif move == 1:
            request = ("PUT", f"/v1/objects/{card}/values/owner", {"value": {"$ref": player}})
        elif move == 2:
            request = ("PATCH", f"/v1/objects/{player}", {"values": {"team": chance.choice(["red", "blue", "green"]),
                                                                       "name": f"N{n}"}})
        else:
            request = ("PUT", f"/v1/objects/{card}/values/rank", {"value": chance.randrange(100)})
        status, body = balancer.request(*request, connection=connection)
        if status == 200:
            written.append(body["revision"])
        elif status != 502:  # the balancer's answer for the killed node's in-flight request
            connection.close()
            connection = balancer.connection()
    connection.close()


@pytest.mark.parametrize("seed", range(1, 4))
def test_a_query_stream_resumed_on_another_node_after_kill_9_is_byte_identical(cluster, seed):
    chance = random.Random(seed)
    a, b, c = cluster.nodes
    tag = f"q{seed}"
    populate(cluster.balancer, tag)
    observer = ok(*cluster.balancer.request("POST", "/v1/observers", {"lease": 60}))["id"]
    ok(*cluster.balancer.request("POST", f"/v1/observers/{observer}/queries", QUERY), expected=(201,))
    path = f"/v1/observers/{observer}/events"
    on_a, on_b_live, control = RawStream(a, path), RawStream(b, path), RawStream(c, path)
    stop, written = threading.Event(), []
    thread = threading.Thread(target=writer, args=(cluster.balancer, tag, chance, stop, written))
    thread.start()
    time.sleep(chance.uniform(0.8, 1.5))
    a.kill()
    got = list(on_a.raw)
    last_id = max((item[1] for item in got if item[1] is not None), default=0)
    resumed = RawStream(b, path, last_event_id=last_id)
    time.sleep(1.0)
    stop.set()
    thread.join()
    wait_until(lambda: control.raw and max(i or 0 for _, i, _ in control.raw) ==
               max(i or 0 for _, i, _ in resumed.raw + [("", last_id, "")]), timeout=15,
               message="the resumed stream catching up with the control stream")
    combined = [item for item in got if item[1] is not None and item[1] <= last_id] + \
               [item for item in resumed.raw if item[1] is not None]
    ids = [item[1] for item in combined]
    assert ids == list(range(1, len(ids) + 1)), "no gap, no duplicate"
    assert last_id > 0 and len(ids) > last_id, "records before the kill and after the resume"
    control_events = [item for item in control.raw if item[1] is not None]
    assert combined == control_events, "byte-identical to a stream that never moved"
    live_b = [item for item in on_b_live.raw if item[1] is not None]
    assert live_b == control_events[:len(live_b)], "every node computes the same records"
    assert {name for name, _, _ in control_events} == {"query"} and len(written) > 10

    # The records, applied in order, give the window every node answers now.
    window = []
    for _, _, data in [item for item in control.raw if item[0] == "query"]:
        record = json.loads(data)
        if record.get("initial"):
            window = []
        for removal in reversed(record["removed"]):
            assert window[removal["index"]]["id"] == removal["id"]
            del window[removal["index"]]
        for insertion in record["inserted"]:
            window.insert(insertion["index"], {"id": insertion["id"], "values": insertion["new"]})
        for update in record["updated"]:
            window[update["index"]]["values"].update(update["new"])
    definition = {key: QUERY[key] for key in ("class", "where", "orderBy", "limit", "select")}
    for node in (b, c):
        answer = ok(*node.request("POST", "/v1/query", definition))
        assert answer["objects"] == window, f"node {node.args[3]}"
    for stream in (on_a, on_b_live, control, resumed):
        stream.close()
    cluster.restart(0)
