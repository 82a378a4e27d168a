"""Section 11: many obs-server nodes on one PostgreSQL, behind nginx, serve one service."""

import json
import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cluster import Cluster, RawStream, kill_and_resume, ok, wait_until


@pytest.fixture(scope="module")
def cluster():
    # A checkpoint every 100 log positions: restarts in these tests load one and the log is truncated.
    cluster = Cluster(size=3, node_args=["--checkpoint-commands", "100"])
    yield cluster
    cluster.stop()


def test_a_write_on_one_node_is_read_on_another_at_once(cluster):
    a, b, c = cluster.nodes
    ok(*a.request("POST", "/v1/objects", {"id": "ryw", "values": {"n": 0}}))
    for n in range(1, 101):
        writer, reader = random.sample([a, b, c], 2)
        revision = ok(*writer.request("PUT", "/v1/objects/ryw/values/n", {"value": n}))["revision"]
        status, body = reader.request("GET", "/v1/objects/ryw")
        assert status == 200 and body["values"]["n"] == n and body["revision"] >= revision, (n, body)


def test_concurrent_writers_on_every_node_get_one_total_order(cluster):
    admin = [RawStream(node, "/v1/events") for node in cluster.nodes]
    for index in range(3):
        ok(*cluster.nodes[index].request("POST", "/v1/objects", {"id": f"order{index}", "values": {"n": 0}}))
    revisions = []
    lock = threading.Lock()

    def writer(index):
        node = cluster.nodes[index % 3]
        connection = node.connection()
        for n in range(40):
            status, body = node.request("PUT", f"/v1/objects/order{n % 3}/values/n", {"value": n}, connection=connection)
            assert status == 200, body
            with lock:
                revisions.append(body["revision"])
        connection.close()

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(writer, range(6)))
    assert len(revisions) == len(set(revisions)) == 240, "every 2xx revision is unique"
    last = max(revisions)
    for stream in admin:
        stream.wait_for(lambda event, _id, data: data.get("revision") == last, timeout=15)
    time.sleep(0.3)
    sequences = [[item for item in stream.raw if item[0] == "change"] for stream in admin]
    assert sequences[0] == sequences[1] == sequences[2], "every node's admin stream: same ids, same bytes"
    seen = [json.loads(data)["revision"] for _, _, data in sequences[0]]
    assert seen == sorted(seen)
    for stream in admin:
        stream.close()


def test_identical_registrations_racing_over_the_nodes_give_one_201(cluster):
    ok(*cluster.balancer.request("POST", "/v1/objects", {"id": "race", "values": {"x": 1}}))
    observer = ok(*cluster.balancer.request("POST", "/v1/observers", {"lease": 60}))["id"]

    def register(index):
        return cluster.nodes[index % 3].request(
            "POST", f"/v1/observers/{observer}/observations", {"object": "race", "keyPaths": ["x"]})[0]

    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(register, range(50)))
    assert statuses.count(201) == 1 and statuses.count(200) == 49, statuses


@pytest.mark.parametrize("seed", range(1, 11))
def test_a_stream_resumed_on_another_node_after_kill_9_has_no_gap_and_no_duplicate(cluster, seed):
    chance = random.Random(seed)
    balancer = cluster.balancer
    boss, emp = f"boss{seed}", f"emp{seed}"
    ok(*balancer.request("POST", "/v1/objects", {"id": boss, "values": {"name": "Ann"}}))
    ok(*balancer.request("POST", "/v1/objects", {"id": emp, "values": {"boss": {"$ref": boss}, "tags": []}}))
    observer = ok(*balancer.request("POST", "/v1/observers", {"lease": 60}))["id"]
    ok(*balancer.request("POST", f"/v1/observers/{observer}/observations",
                         {"object": emp, "keyPaths": ["boss.name", "tags"], "options": ["new", "old", "prior"]}))
    written = []

    def write(stop):
        connection = balancer.connection()
        n = 0
        while not stop.is_set():
            n += 1
            if n % 3 == 0:
                status, body = balancer.request("POST", f"/v1/objects/{emp}/values/tags/mutations",
                                                {"kind": "insertion", "indexes": [0], "values": [n]},
                                                connection=connection)
            else:
                status, body = balancer.request("PATCH", f"/v1/objects/{boss}", {"values": {"name": f"n{n}"}},
                                                connection=connection)
            if status in (200, 201):
                written.append(body["revision"])
            elif status != 502:  # the balancer's answer for the killed node's in-flight request
                connection.close()
                connection = balancer.connection()
        connection.close()

    kill_and_resume(cluster, f"/v1/observers/{observer}/events", write, chance)


def test_a_lease_expires_exactly_once_when_the_node_holding_its_stream_is_killed(cluster):
    a, b, c = cluster.nodes
    admin_b = RawStream(b, "/v1/events")
    admin_c = RawStream(c, "/v1/events")
    observer = ok(*a.request("POST", "/v1/observers", {"lease": 2}))["id"]
    stream = RawStream(a, f"/v1/observers/{observer}/events")
    wait_until(lambda: ok(*b.request("GET", f"/v1/observers/{observer}"))["streams"] == 1,
               message="the stream counted cluster-wide")
    time.sleep(2.5)
    assert ok(*c.request("GET", f"/v1/observers/{observer}"))["streams"] == 1, "a held lease does not run"
    a.kill()
    removed = lambda e, i, d: e == "observerRemoved" and d.get("observer") == observer
    got_b = admin_b.wait_for(removed, timeout=20)
    got_c = admin_c.wait_for(removed, timeout=5)
    assert got_b[2]["reason"] == "expired" and got_b == got_c, "the same event, with the same id, on every node"
    time.sleep(1.5)
    assert [item for item in admin_b.events if removed(*item)] == [got_b], "exactly once"
    for s in (admin_b, admin_c, stream):
        s.close()
    cluster.restart(0)


def test_every_node_reports_its_cluster_figures(cluster):
    for node in cluster.nodes:
        # Live nodes are counted once a second (a restarted node shows within it).
        wait_until(lambda: ok(*node.request("GET", "/v1/stats"))["cluster"]["nodes"] == 3, timeout=5,
                   message="three live nodes")
        figures = ok(*node.request("GET", "/v1/stats"))["cluster"]
        assert figures["applied"] == figures["head"] > 0, figures
    names = {ok(*node.request("GET", "/v1/stats"))["cluster"]["node"] for node in cluster.nodes}
    assert names == {"n1", "n2", "n3"}


def test_a_node_cut_off_from_postgres_closes_its_streams_answers_503_and_recovers(cluster):
    postgres = cluster.postgres
    postgres.sql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cutoff') THEN "
                 "CREATE ROLE cutoff LOGIN SUPERUSER; END IF; END $$")
    node = cluster.node("n4")
    node.args[1] = postgres.url.replace("obs@", "cutoff@")
    node.start(timeout=30)
    try:
        observer = ok(*node.request("POST", "/v1/observers", {"lease": 60}))["id"]
        stream = RawStream(node, f"/v1/observers/{observer}/events")
        wait_until(lambda: ok(*cluster.nodes[0].request("GET", f"/v1/observers/{observer}"))["streams"] == 1)
        postgres.sql("ALTER ROLE cutoff NOLOGIN")
        postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'cutoff'")
        stream.thread.join(timeout=10)
        assert not stream.thread.is_alive(), "the node closed its stream"
        wait_until(lambda: node.request("GET", "/healthz")[0] == 503, timeout=10, message="/healthz 503")
        status, body = node.request("GET", "/healthz")
        assert status == 503 and body["error"]["code"] == "unavailable", body  # section 2's body, like every 5xx
        connection = node.connection()
        connection.request("PUT", "/v1/objects/nowhere/values/x", body=json.dumps({"value": 1}),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
        assert response.status == 503 and body["error"]["code"] == "unavailable", body
        assert response.getheader("Retry-After") == "1"
        connection.close()
        wait_until(lambda: ok(*cluster.nodes[1].request("GET", f"/v1/observers/{observer}"))["streams"] == 0,
                   message="the keeper reporting the cut-off node down")
        postgres.sql("ALTER ROLE cutoff LOGIN")
        wait_until(lambda: node.request("GET", "/healthz")[0] == 200, timeout=20, message="the node rejoining")
        revision = ok(*node.request("PUT", f"/v1/objects/ryw/values/n", {"value": -1}))["revision"]
        assert ok(*cluster.nodes[2].request("GET", "/v1/objects/ryw"))["revision"] >= revision
    finally:
        node.stop()


def test_answers_survive_a_terminated_appender_and_no_503_takes_effect(cluster):
    a = cluster.nodes[0]
    ok(*a.request("POST", "/v1/objects", {"id": "doubt", "values": {}}))
    results = {}
    stop = threading.Event()

    def writer(index):
        connection = a.connection()
        n = 0
        while not stop.is_set():
            key = f"w{index}k{n}"
            n += 1
            try:
                status, _ = a.request("PATCH", "/v1/objects/doubt", {"values": {key: n}}, connection=connection)
            except OSError:
                connection.close()
                connection = a.connection()
                continue  # no answer: either outcome is allowed
            results[key] = status
        connection.close()

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(5):
        time.sleep(0.3)
        cluster.postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = 'obs n1 appender'")
    time.sleep(0.3)
    stop.set()
    for thread in threads:
        thread.join()
    values = ok(*cluster.nodes[2].request("GET", "/v1/objects/doubt"))["values"]
    answered = [key for key, status in results.items() if status == 200]
    refused = [key for key, status in results.items() if status == 503]
    assert answered, results
    assert set(results.values()) <= {200, 503}, set(results.values())
    assert all(key in values for key in answered), "every 2xx is in the log"
    assert not any(key in values for key in refused), "nothing answered 503 took effect"


def test_acknowledged_writes_survive_killing_every_node_and_postgres(cluster):
    balancer = cluster.balancer
    ok(*balancer.request("POST", "/v1/objects", {"id": "durable", "values": {"n": 0}}))
    observer = ok(*balancer.request("POST", "/v1/observers", {"lease": 600}))["id"]
    ok(*balancer.request("POST", f"/v1/observers/{observer}/observations",
                         {"object": "durable", "keyPaths": ["n"], "options": ["new"]}))
    connection = balancer.connection()
    last = 0
    for n in range(1, 1001):
        last = ok(*balancer.request("PUT", "/v1/objects/durable/values/n", {"value": n}, connection=connection))[
            "revision"]
    connection.close()
    before = ok(*cluster.nodes[0].request("GET", f"/v1/observers/{observer}"))["lastEventId"]
    for node in cluster.nodes:
        node.kill()
    cluster.postgres.stop("immediate")
    cluster.postgres.start()
    for index in range(3):
        cluster.restart(index)
    for node in cluster.nodes:
        body = ok(*node.request("GET", "/v1/objects/durable"))
        assert body["values"]["n"] == 1000 and body["revision"] == last, body
        assert ok(*node.request("GET", f"/v1/observers/{observer}"))["lastEventId"] == before
    after = ok(*cluster.nodes[1].request("PUT", "/v1/objects/durable/values/n", {"value": 1001}))["revision"]
    # Revisions continue, never reused (a lease of an earlier test's observer may expire meanwhile:
    # the keeper's expiry takes a revision of its own).
    assert after > last, "revisions continue"
    stream = RawStream(cluster.nodes[2], f"/v1/observers/{observer}/events", last_event_id=before)
    event = stream.wait_for(lambda e, i, d: e == "change", timeout=10)
    assert event[1] == before + 1 and event[2]["new"] == 1001, "event ids are never reused"
    stream.close()


def oldest(node, path):
    """The oldest event id a node's buffer holds for `path` (a replica loaded from a checkpoint
    holds only what came after it: resuming from before answers `reset`)."""
    stream = RawStream(node, path, last_event_id=0)
    try:
        event, event_id, data = stream.wait_for(lambda *_: True, timeout=10)
    finally:
        stream.close()
    return data["oldestAvailable"] if event == "reset" else event_id


def replay(node, path, after, last):
    """The events a node's buffer holds for `path` after id `after`, up to id `last`."""
    stream = RawStream(node, path, last_event_id=after)
    stream.wait_for(lambda e, i, d: i == last, timeout=15)
    stream.close()
    return [item for item in stream.raw if item[1] is not None and item[1] <= last]


def last_admin_id(node, after):
    stream = RawStream(node, "/v1/events", last_event_id=after)
    time.sleep(1.0)
    stream.close()
    return max(i for _, i, _ in stream.raw if i is not None)


def assert_identical_buffers(nodes, path, last):
    """Every node's buffer for `path`, from the oldest event all of them hold, has the same ids and bytes."""
    common = max(oldest(node, path) for node in nodes)
    buffers = [replay(node, path, common - 1, last) for node in nodes]
    assert buffers[0] and buffers[0][0][1] == common, (path, buffers[0][:1], common)
    for buffer in buffers[1:]:
        assert buffer == buffers[0], f"{path}: the same ids and bytes on every node"


def test_a_random_mix_over_every_node_leaves_identical_replicas(cluster):
    chance = random.Random(7)
    nodes = cluster.nodes
    pick = lambda: chance.choice(nodes)
    people = [f"mix{n}" for n in range(6)]
    for person in people:
        ok(*pick().request("POST", "/v1/objects", {"id": person, "values": {"name": person, "friends": []}}))
    observers = [ok(*pick().request("POST", "/v1/observers", {"lease": 600}))["id"] for _ in range(4)]
    for observer in observers:
        ok(*pick().request("POST", f"/v1/observers/{observer}/observations",
                           {"object": chance.choice(people), "keyPaths": ["name", "friends.@count", "boss.name"],
                            "options": chance.choice([["new"], ["new", "old"], ["new", "old", "prior", "initial"]])}))
        ok(*pick().request("POST", f"/v1/observers/{observer}/subscriptions", {"name": "Ping"}))
    for n in range(150):
        person = chance.choice(people)
        roll = chance.random()
        if roll < 0.4:
            pick().request("PUT", f"/v1/objects/{person}/values/name", {"value": f"v{n}"})
        elif roll < 0.6:
            pick().request("PUT", f"/v1/objects/{person}/values/boss", {"value": {"$ref": chance.choice(people)}})
        elif roll < 0.8:
            pick().request("POST", f"/v1/objects/{person}/values/friends/mutations",
                           {"kind": "insertion", "indexes": [0], "values": [{"$ref": chance.choice(people)}]})
        elif roll < 0.9:
            pick().request("POST", "/v1/notifications", {"name": "Ping", "userInfo": {"n": n},
                                                          "posting": chance.choice(["now", "asap"])})
        else:
            pick().request("PATCH", f"/v1/objects/{person}", {"values": {"name": f"p{n}", "extra": n}})
    time.sleep(0.5)  # queued `asap` postings go out
    for observer in observers:
        last = ok(*nodes[0].request("GET", f"/v1/observers/{observer}"))["lastEventId"]
        assert_identical_buffers(nodes, f"/v1/observers/{observer}/events", last)
    assert_identical_buffers(nodes, "/v1/events", last_admin_id(nodes[0], oldest(nodes[0], "/v1/events") - 1))
    assert_same_digests(nodes)


def stats(node):
    return ok(*node.request("GET", "/v1/stats"))["cluster"]


def assert_same_digests(nodes, timeout=15):
    """Once the cluster is quiet, every node's digest of what it applied is the same at the same position."""
    figures = []

    def settled():
        figures[:] = [stats(node) for node in nodes]
        positions = {(f["digestPosition"], f["head"]) for f in figures}
        return len(positions) == 1 and figures[0]["digestPosition"] == figures[0]["head"]

    wait_until(settled, timeout=timeout, message="every node at the log's head")
    assert len({f["digest"] for f in figures}) == 1, figures


def test_a_node_outvoted_on_its_digest_rebuilds_its_replica_and_serves_the_same_state(cluster):
    a, b, c = cluster.nodes
    assert stats(a)["node"] == "n1"
    wait_until(lambda: all(stats(node)["nodes"] == 3 for node in cluster.nodes), timeout=10, message="3 live nodes")
    ok(*b.request("POST", "/v1/objects", {"id": "dv", "values": {"n": 0}}))
    observer = ok(*b.request("POST", "/v1/observers", {"lease": 600}))["id"]
    ok(*b.request("POST", f"/v1/observers/{observer}/observations",
                  {"object": "dv", "keyPaths": ["n"], "options": ["new", "old"]}))
    # Past a checkpoint (every 100 positions here): a rebuilt n1 holds only the events after it.
    connection = b.connection()
    for n in range(150):
        ok(*b.request("PUT", "/v1/objects/dv/values/n", {"value": -n}, connection=connection))
    connection.close()
    wait_until(lambda: int(cluster.postgres.sql("SELECT position FROM obs_checkpoint")) > stats(b)["head"] - 100,
               timeout=10, message="a checkpoint after the observer's first events")
    stream = RawStream(a, f"/v1/observers/{observer}/events")
    before = {stats(node)["node"]: stats(node)["rebuilds"] for node in cluster.nodes}
    start = stats(a)["head"]
    # The other two nodes report another digest than n1's at every position from here on, as if
    # n1's replica had gone wrong: n1 is outvoted, rebuilds, and serves again.
    cluster.postgres.sql(f"""
        CREATE FUNCTION obs_test_tamper() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.node <> 'n1' AND NEW.seq > {start} THEN NEW.digest := '00000000deadbeef'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER obs_test_tamper BEFORE INSERT OR UPDATE ON obs_digests
            FOR EACH ROW EXECUTE FUNCTION obs_test_tamper();
        """)
    try:
        for n in range(1, 4):
            ok(*c.request("PUT", "/v1/objects/dv/values/n", {"value": n}))
        wait_until(lambda: stats(a)["rebuilds"] > before["n1"], timeout=20, message="n1 rebuilds its replica")
    finally:
        cluster.postgres.sql(f"""
            DROP TRIGGER obs_test_tamper ON obs_digests; DROP FUNCTION obs_test_tamper();
            DELETE FROM obs_digests WHERE seq > {start} AND node <> 'n1';
            """)
    stream.thread.join(timeout=10)
    assert not stream.thread.is_alive(), "n1 closed its streams when it found itself outvoted"
    wait_until(lambda: a.request("GET", "/healthz")[0] == 200, timeout=20, message="n1 healthy again")
    path = f"/v1/observers/{observer}/events"
    assert oldest(a, path) > oldest(b, path) == 1, "n1 threw its replica away and loaded the checkpoint"
    for n in range(4, 30):
        ok(*(a, b, c)[n % 3].request("PUT", "/v1/objects/dv/values/n", {"value": n}))
    last = ok(*b.request("GET", f"/v1/observers/{observer}"))["lastEventId"]
    assert_identical_buffers(cluster.nodes, f"/v1/observers/{observer}/events", last)
    assert_same_digests(cluster.nodes)
    after = {stats(node)["node"]: stats(node)["rebuilds"] for node in cluster.nodes}
    assert after["n2"] == before["n2"] and after["n3"] == before["n3"], (before, after)


def test_a_lagging_node_makes_a_resuming_client_wait_then_continues_without_a_gap(cluster):
    a, b, _ = cluster.nodes
    ok(*a.request("POST", "/v1/objects", {"id": "lag", "values": {"n": 0}}))
    observer = ok(*a.request("POST", "/v1/observers", {"lease": 600}))["id"]
    ok(*a.request("POST", f"/v1/observers/{observer}/observations",
                  {"object": "lag", "keyPaths": ["n"], "options": ["new"]}))
    ok(*a.request("PUT", "/v1/objects/lag/values/n", {"value": 1}))
    seen = ok(*a.request("GET", f"/v1/observers/{observer}"))["lastEventId"]
    b.process.send_signal(signal.SIGSTOP)
    try:
        for n in range(2, 12):
            ok(*a.request("PUT", "/v1/objects/lag/values/n", {"value": n}))
        opened = []
        thread = threading.Thread(target=lambda: opened.append(
            RawStream(b, f"/v1/observers/{observer}/events", last_event_id=seen)))
        thread.start()
        time.sleep(2)
    finally:
        b.process.send_signal(signal.SIGCONT)
    thread.join(timeout=15)
    stream = opened[0]
    stream.wait_for(lambda e, i, d: d.get("new") == 11, timeout=15)
    changes = [(i, d["new"]) for e, i, d in stream.events if e == "change"]
    assert changes == [(seen + k, k + 1) for k in range(1, 11)], changes
    stream.close()


def test_an_idle_cluster_costs_no_cpu(cluster):
    def cpu(node):
        fields = open(f"/proc/{node.process.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    time.sleep(1)
    before = [cpu(node) for node in cluster.nodes]
    time.sleep(10)
    used = [cpu(node) - start for node, start in zip(cluster.nodes, before)]
    assert all(seconds < 0.3 for seconds in used), f"CPU seconds over 10 s idle, per node: {used}"


def test_a_node_joining_after_checkpoints_loads_one_and_continues_as_an_identical_replica(cluster):
    balancer, postgres = cluster.balancer, cluster.postgres
    ok(*balancer.request("POST", "/v1/objects", {"id": "late", "values": {"n": 0, "list": []}}))
    observer = ok(*balancer.request("POST", "/v1/observers", {"lease": 600}))["id"]
    ok(*balancer.request("POST", f"/v1/observers/{observer}/observations",
                         {"object": "late", "keyPaths": ["n", "list"], "options": ["new", "old"]}))
    doomed = ok(*balancer.request("POST", "/v1/observers", {"lease": 4}))["id"]
    held = ok(*balancer.request("POST", "/v1/observers", {"lease": 2}))["id"]
    held_stream = RawStream(cluster.nodes[1], f"/v1/observers/{held}/events")
    connection = balancer.connection()
    for n in range(250):
        ok(*balancer.request("PUT", "/v1/objects/late/values/n", {"value": n}, connection=connection))
    connection.close()
    wait_until(lambda: int(postgres.sql("SELECT count(*) FROM obs_log")) < 200, timeout=10,
               message="the log truncated behind the checkpoints")
    checkpoint = int(postgres.sql("SELECT position FROM obs_checkpoint"))
    assert checkpoint >= 200, checkpoint
    late = cluster.node("n5")
    late.start(timeout=30)
    try:
        old = cluster.nodes[0]
        admin_old, admin_late = RawStream(old, "/v1/events"), RawStream(late, "/v1/events")
        for n in range(60):
            writer = (old, late, cluster.nodes[2])[n % 3]
            if n % 4 == 0:
                ok(*writer.request("POST", "/v1/objects/late/values/list/mutations",
                                   {"kind": "insertion", "indexes": [0], "values": [n]}))
            else:
                ok(*writer.request("PUT", "/v1/objects/late/values/n", {"value": 1000 + n}))
        ok(*late.request("POST", f"/v1/observers/{observer}/observations",
                         {"object": "late", "keyPaths": ["list.@count"], "options": ["new"]}))
        ok(*old.request("PUT", "/v1/objects/late/values/list", {"value": [1, 2, 3]}))
        # The observer without a stream expires (a deadline from before the checkpoint); the one
        # whose stream n2 holds does not.
        removed = lambda e, i, d: e == "observerRemoved" and d.get("observer") == doomed
        got_old = admin_old.wait_for(removed, timeout=15)
        got_late = admin_late.wait_for(removed, timeout=5)
        assert got_old == got_late
        assert ok(*late.request("GET", f"/v1/observers/{held}"))["streams"] == 1
        assert_identical_buffers([old, late], "/v1/events", got_old[1])
        assert_identical_buffers([old, late], f"/v1/observers/{observer}/events",
                                 ok(*old.request("GET", f"/v1/observers/{observer}"))["lastEventId"])
        assert ok(*late.request("GET", "/v1/objects/late")) == ok(*old.request("GET", "/v1/objects/late"))
        assert ok(*late.request("GET", f"/v1/observers/{observer}/observations")) == \
            ok(*old.request("GET", f"/v1/observers/{observer}/observations"))
        for stream in (admin_old, admin_late):
            stream.close()
    finally:
        held_stream.close()
        late.stop()
