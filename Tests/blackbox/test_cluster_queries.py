"""Section 12 on a cluster (section 11): every node computes the same query records, byte for byte,
and a query's stream resumed on another node after `kill -9` goes on without a gap or a duplicate."""

import json
import random

import pytest

from cluster import module_cluster, RawStream, kill_and_resume, ok


cluster = module_cluster(size=3, node_args=["--checkpoint-commands", "100"])


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
    b = cluster.nodes[1]
    tag = f"q{seed}"
    populate(cluster.balancer, tag)
    observer = ok(*cluster.balancer.request("POST", "/v1/observers", {"lease": 60}))["id"]
    ok(*cluster.balancer.request("POST", f"/v1/observers/{observer}/queries", QUERY), expected=(201,))
    path = f"/v1/observers/{observer}/events"
    on_b_live, written = RawStream(b, path), []
    control_events = kill_and_resume(
        cluster, path, lambda stop: writer(cluster.balancer, tag, chance, stop, written), chance)
    live_b = [item for item in on_b_live.raw if item[1] is not None]
    on_b_live.close()
    assert live_b == control_events[:len(live_b)], "every node computes the same records"
    assert {name for name, _, _ in control_events} == {"query"} and len(written) > 10

    # The records, applied in order, give the window every node answers now.
    window = []
    for _, _, data in control_events:
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
    for node in cluster.nodes:
        answer = ok(*node.request("POST", "/v1/query", definition))
        assert answer["objects"] == window, f"node {node.args[3]}"
