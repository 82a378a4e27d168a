"""A data directory on a real filesystem that fills up (section 10: writes answer 503 with
Retry-After, reads and streams go on, nothing answered is lost, writes come back with space).

The filesystem is a small tmpfs this test mounts itself (not fault injection): the server
meets a real ENOSPC from SQLite. Mounting needs root, which CI has; without it the test fails
and says so rather than pass without having tried.
"""

import http.client
import os
import subprocess
import threading
import time

import pytest
from conftest import EventStreamReader

VALUE = "v" * 60_000  # each write adds about this much to the WAL


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    assert mounted.returncode == 0, f"this test mounts a small tmpfs and needs root: {mounted.stderr}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path, leave):
    """Writes a ballast file that leaves about `leave` bytes free on the filesystem of `path`."""
    stats = os.statvfs(path)
    size = max(0, stats.f_bavail * stats.f_frsize - leave)
    with open(path / "ballast", "wb") as ballast:
        ballast.write(b"\0" * size)
    return path / "ballast"


def put(server, key, timeout=3):
    """PUT a big value; returns (status, body, headers), or None when no answer came in time."""
    connection = server.connection(timeout=timeout)
    try:
        status, body = server.request("PUT", f"/v1/objects/doc/values/{key}", {"value": VALUE},
                                      connection=connection)
        return status, body
    except (TimeoutError, OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


def test_a_full_disk_answers_503_keeps_reading_and_loses_nothing(server_factory, small_disk):
    server = server_factory("--heartbeat-interval", "1", data_dir=small_disk / "data").start()
    assert server.request("POST", "/v1/objects", {"id": "doc"})[0] == 201
    observer = server.request("POST", "/v1/observers", {"name": "reader", "lease": 600})[1]["id"]
    assert server.request("POST", f"/v1/observers/{observer}/observations",
                          {"object": "doc", "keyPath": "k0", "options": ["new"]})[0] == 201
    stream = EventStreamReader(server, f"/v1/observers/{observer}/events")
    ballast = fill(small_disk, leave=3 * 1024 * 1024)

    acknowledged = []
    refused = None
    for index in range(200):
        answer = put(server, f"k{index}")
        if answer is None:
            continue  # held: its change waits for the disk (not acknowledged)
        status, body = answer
        if status == 200:
            acknowledged.append(f"k{index}")
        else:
            refused = (status, body)
            break
    assert refused is not None, "the disk never filled"
    status, body = refused
    assert status == 503 and body["error"]["code"] == "unavailable", refused
    assert len(acknowledged) >= 3, acknowledged

    # While the disk is full: writes are refused with Retry-After, and change nothing ...
    connection = server.connection()
    connection.request("POST", "/v1/objects", body='{"id": "late"}', headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 503 and int(answer.getheader("Retry-After")) >= 1
    answer.read()
    connection.close()
    assert server.request("GET", "/v1/objects/late")[0] == 404
    assert server.request("GET", "/v1/stats")[1]["writable"] is False
    # ... reads go on, and so do streams: the open one still gets its keep-alives and events,
    # and a new one opens.
    assert server.request("GET", f"/v1/objects/doc/values/{acknowledged[0]}")[1]["value"] == VALUE
    stream.wait_for(lambda event, _, data: event == "change" and data["keyPath"] == "k0")
    comments = stream.comments
    deadline = time.monotonic() + 5
    while stream.comments == comments:  # the open stream is alive: its keep-alives keep coming
        assert time.monotonic() < deadline, "no keep-alive on the open stream while the disk was full"
        time.sleep(0.05)
    second = EventStreamReader(server, f"/v1/observers/{observer}/events")
    second.wait_for(lambda event, _, data: event == "change" and data["keyPath"] == "k0")

    # Space comes back: writes succeed again, without a restart.
    ballast.unlink()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = put(server, "after", timeout=5)
        if answer and answer[0] == 200:
            break
        time.sleep(0.2)
    else:
        pytest.fail("writes did not come back once the disk had room")
    assert server.request("GET", "/v1/stats")[1]["writable"] is True

    # Nothing answered 2xx was lost: a restart reads every acknowledged write back.
    stream.close()
    second.close()
    server.stop()
    server.start()
    for key in acknowledged + ["after"]:
        status, body = server.request("GET", f"/v1/objects/doc/values/{key}")
        assert status == 200 and body["value"] == VALUE, key


def read_back(server, keys):
    """The keys whose value reads back as written."""
    return {key for key in keys
            if (answer := server.request("GET", f"/v1/objects/doc/values/{key}"))[0] == 200
            and answer[1].get("value") == VALUE}


def test_writes_the_disk_cannot_take_are_answered_within_the_commit_timeout_and_leave_nothing(server_factory,
                                                                                            small_disk):
    timeout = 2.0
    server = server_factory("--commit-timeout", str(timeout), data_dir=small_disk / "data").start()
    assert server.request("POST", "/v1/objects", {"id": "doc"})[0] == 201
    ballast = fill(small_disk, leave=3 * 1024 * 1024)

    results = []  # (key, status or None, seconds)
    lock = threading.Lock()

    def writer(number):
        refused = 0
        for index in range(60):
            key = f"w{number}_{index}"
            started = time.monotonic()
            answer = put(server, key, timeout=timeout + 5)
            elapsed = time.monotonic() - started
            with lock:
                results.append((key, answer[0] if answer else None, elapsed))
            refused += answer is not None and answer[0] == 503
            if refused >= 3:
                return

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)

    unanswered = [result for result in results if result[1] is None]
    assert not unanswered, f"writes without an answer: {unanswered[:5]}"
    late = [result for result in results if result[2] > timeout + 1.5]
    assert not late, f"answered later than --commit-timeout {timeout} s allows: {late[:5]}"
    acknowledged = {key for key, status, _ in results if status == 200}
    refused = {key for key, status, _ in results if status == 503}
    assert acknowledged and refused and len(acknowledged | refused) == len(results), results
    slowest = max(seconds for _, status, seconds in results if status == 503)
    print(f"{len(acknowledged)} writes acknowledged, {len(refused)} refused; slowest 503 after {slowest:.2f} s")

    def check(when):
        assert read_back(server, acknowledged) == acknowledged, f"an acknowledged write is missing {when}"
        assert not read_back(server, refused), f"a write answered 503 shows {when}"

    check("while the disk is full")
    ballast.unlink()
    deadline = time.monotonic() + 15
    while server.request("GET", "/v1/stats")[1]["writable"] is not True:
        assert time.monotonic() < deadline, "writes did not come back once the disk had room"
        time.sleep(0.1)
    assert put(server, "after")[0] == 200
    check("once the disk has room again")
    server.kill()
    server.start()
    check("after kill -9 and a restart")
    assert read_back(server, ["after"]) == {"after"}
