"""Nothing answered is lost: SIGKILL in the middle of a concurrent write load, then restart."""

import http.client
import threading
import time

from conftest import Bank, EventStreamReader

WRITERS = 6
LOAD_SECONDS = 2.0


def writer(server, index, acknowledged, stop):
    """Writes an increasing counter, an atomic two-key patch and new objects; records what was answered."""
    connection = server.connection(timeout=5)
    record = acknowledged[index]
    step = 0
    try:
        while not stop.is_set():
            step += 1
            status, _ = server.request("PUT", f"/v1/objects/w{index}/values/n", {"value": step}, connection=connection)
            if status == 200:
                record["n"] = step
            status, _ = server.request(
                "PATCH", f"/v1/objects/w{index}", {"values": {"a": step, "b": step}}, connection=connection
            )
            if status == 200:
                record["ab"] = step
            status, _ = server.request(
                "POST", "/v1/objects", {"id": f"w{index}-{step}", "values": {"step": step}}, connection=connection
            )
            if status == 201:
                record["created"].append(f"w{index}-{step}")
    except (OSError, http.client.HTTPException):
        pass  # the server was killed


def test_sigkill_loses_no_answered_write(server_factory, tmp_path):
    server = server_factory(data_dir=tmp_path / "data").start()
    for index in range(WRITERS):
        status, _ = server.request("POST", "/v1/objects", {"id": f"w{index}", "values": {"n": 0, "a": 0, "b": 0}})
        assert status == 201
    status, observer = server.request("POST", "/v1/observers", {"lease": 600})
    assert status == 201
    status, _ = server.request(
        "POST", f"/v1/observers/{observer['id']}/observations", {"object": "w0", "keyPath": "n", "options": ["new"]}
    )
    assert status == 201

    acknowledged = [{"n": 0, "ab": 0, "created": []} for _ in range(WRITERS)]
    stop = threading.Event()
    stream = EventStreamReader(server, f"/v1/observers/{observer['id']}/events")
    threads = [threading.Thread(target=writer, args=(server, i, acknowledged, stop)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(LOAD_SECONDS)
    server.kill()  # mid-load: requests are in flight
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    stream.thread.join(timeout=10)  # the kill ended the stream
    stream.close()
    seen_ids = [event_id for _, event_id, _ in stream.events if event_id is not None]
    assert sum(a["n"] for a in acknowledged) > 50, "the load did not get going"

    restarted = server_factory(data_dir=tmp_path / "data").start()
    for index, answered in enumerate(acknowledged):
        status, obj = restarted.request("GET", f"/v1/objects/w{index}")
        assert status == 200
        values = obj["values"]
        assert values["n"] >= answered["n"], f"w{index}: answered n={answered['n']}, found {values['n']}"
        assert values["a"] == values["b"], f"w{index}: torn patch {values}"
        assert values["a"] >= answered["ab"]
        for created in answered["created"]:
            status, _ = restarted.request("GET", f"/v1/objects/{created}")
            assert status == 200, f"answered creation of {created} was lost"

    # The observer's event ids continue: no id a client received is ever handed out again.
    assert seen_ids, "the stream received nothing before the kill"
    status, before = restarted.request("GET", f"/v1/observers/{observer['id']}")
    assert status == 200 and before["lastEventId"] >= max(seen_ids)
    status, _ = restarted.request("PUT", "/v1/objects/w0/values/n", {"value": -1})
    assert status == 200
    status, after = restarted.request("GET", f"/v1/observers/{observer['id']}")
    assert after["lastEventId"] == before["lastEventId"] + 1


def test_sigkill_amid_transfer_transactions_leaves_each_whole_or_absent(server_factory, tmp_path):
    """Issue 43: a transaction is one write on disk. Several clients move money between 40 accounts;
    SIGKILL mid-stream; after the restart every acknowledged transfer is there, none in part."""
    server = server_factory(data_dir=tmp_path / "data").start()
    bank = Bank()
    bank.open(server)
    bank.run(server, clients=WRITERS, seconds_before=LOAD_SECONDS, interrupt=server.kill)
    assert len(bank.acknowledged) > 50, "the load did not get going"
    restarted = server_factory(data_dir=tmp_path / "data").start()
    assert bank.check(restarted) >= len(bank.acknowledged)
