"""Section 7.1: whatever clients write and however slowly they read, the server's memory stays
within what its limits allow.

Small budgets, big writes at full speed, and streams that never read: the process's resident
memory (VmRSS, sampled every 50 ms) must stay under the worst case docs/ARCHITECTURE.md states
for these limits. Without the byte budgets the same load grew the server by gigabytes.
"""

import socket
import threading
import time


KIB, MIB = 1024, 1024 * 1024
REPLAY_BYTES = 1 * MIB
ADMIN_REPLAY_BYTES = 4 * MIB
BODY_LIMIT = 1 * MIB  # the default --max-body-bytes
VALUE_SIZE = 250_000
OBSERVERS = 10
WRITERS = 4
SECONDS = 15


def rss(process):
    with open(f"/proc/{process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * KIB
    raise AssertionError("no VmRSS")


def non_reading_stream(server, path):
    """A stream request whose socket is never read (a tiny receive buffer: it stalls at once)."""
    stream = socket.socket()
    stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stream.connect((server.host, server.port))
    stream.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
    return stream


def worst_case(baseline, streams, connections):
    """docs/ARCHITECTURE.md's bound, term by term, for this test's limits and load."""
    largest_event = 2 * VALUE_SIZE + KIB  # a change record with old and new
    return (
        baseline                                                   # code, runtime, threads: measured at rest
        + 4 * VALUE_SIZE                                           # the data: one object's value (and its copies in flight)
        + OBSERVERS * (REPLAY_BYTES + largest_event)               # observers' replay buffers
        + ADMIN_REPLAY_BYTES + largest_event                       # the admin buffer
        + streams * (64 * KIB + largest_event + 8 * KIB)           # per stream: a batch in flight, libmicrohttpd's pool
        + connections * (8 * KIB + 4 * BODY_LIMIT)                 # per connection: a body and what parsing it makes
    )


def test_memory_stays_under_the_stated_bound_with_big_writes_and_stalled_readers(server_factory):
    server = server_factory("--max-replay-bytes", str(REPLAY_BYTES),
                            "--max-admin-replay-bytes", str(ADMIN_REPLAY_BYTES)).start()
    assert server.request("POST", "/v1/objects", {"id": "doc"})[0] == 201
    stalled = []
    for _ in range(OBSERVERS):
        observer = server.request("POST", "/v1/observers", {"replay": 100_000, "lease": 600})[1]["id"]
        assert server.request("POST", f"/v1/observers/{observer}/observations",
                              {"object": "doc", "keyPath": "blob", "options": ["new", "old"]})[0] == 201
        stalled.append(non_reading_stream(server, f"/v1/observers/{observer}/events"))
    stalled.append(non_reading_stream(server, "/v1/events"))
    time.sleep(0.5)
    baseline = rss(server.process)

    stop = time.monotonic() + SECONDS
    written = []
    body = {"value": "x" * VALUE_SIZE}

    def writer():
        connection = server.connection(timeout=30)
        while time.monotonic() < stop:
            status, _ = server.request("PUT", "/v1/objects/doc/values/blob", body, connection=connection)
            assert status == 200
            written.append(VALUE_SIZE)
        connection.close()

    threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    peak = baseline
    while any(thread.is_alive() for thread in threads):
        peak = max(peak, rss(server.process))
        time.sleep(0.05)
    bound = worst_case(baseline, streams=len(stalled), connections=WRITERS + 1)
    metrics = server.request("GET", "/metrics")[1]
    for stream in stalled:
        stream.close()

    figures = (f"limits: replay {REPLAY_BYTES / MIB:.0f} MiB x {OBSERVERS} observers, admin {ADMIN_REPLAY_BYTES / MIB:.0f} MiB; "
               f"wrote {sum(written) / 1e6:.0f} MB in {len(written)} writes; RSS at rest {baseline / 1e6:.1f} MB, "
               f"peak {peak / 1e6:.1f} MB, bound {bound / 1e6:.1f} MB")
    print(figures)
    assert sum(written) > 4 * (OBSERVERS * REPLAY_BYTES + ADMIN_REPLAY_BYTES), f"too little load to tell: {figures}"
    assert peak <= bound, figures
    gauges = dict(line.split(" ", 1) for line in metrics.splitlines() if line.startswith("obs_") and " " in line)
    assert int(gauges["obs_replay_bytes"]) <= OBSERVERS * REPLAY_BYTES
    assert int(gauges["obs_admin_replay_bytes"]) <= ADMIN_REPLAY_BYTES
    assert int(gauges["obs_dropped_streams_total"]) == len(stalled), "every stalled stream is cut off and counted"
