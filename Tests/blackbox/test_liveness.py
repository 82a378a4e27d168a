"""Section 7.1: a stream client that vanishes without closing (a pulled cable) is noticed.

The client runs in a network namespace of its own, joined to the server's by a veth pair;
taking its end of the link down is the pulled cable: no FIN, no RST, nothing more arrives.
The server finds out from its keep-alive writes, which TCP can no longer deliver
(TCP_USER_TIMEOUT, `--peer-timeout`), and drops the stream from every count.
Needs root for `ip netns` (CI has it): without it the test fails and says so.
"""

import os
import socket
import subprocess
import time

import pytest

NETWORK = "10.231.{}.{}"


def ip(*arguments, namespace=None):
    command = (["ip", "netns", "exec", namespace] if namespace else []) + ["ip", *arguments]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}: {done.stderr} (this test needs root for ip netns)"


@pytest.fixture
def cable():
    """A client namespace and a veth 'cable' to it: (namespace, server address, client link)."""
    tag = os.getpid() % 200 + 20
    namespace, host_end, client_end = f"obs-client-{tag}", f"obsh{tag}", f"obsc{tag}"
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True)  # a leftover of a killed run
    subprocess.run(["ip", "link", "del", host_end], capture_output=True)
    ip("netns", "add", namespace)
    try:
        ip("link", "add", host_end, "type", "veth", "peer", "name", client_end)
        ip("link", "set", client_end, "netns", namespace)
        ip("addr", "add", NETWORK.format(tag, 1) + "/24", "dev", host_end)
        ip("link", "set", host_end, "up")
        ip("addr", "add", NETWORK.format(tag, 2) + "/24", "dev", client_end, namespace=namespace)
        ip("link", "set", client_end, "up", namespace=namespace)
        yield namespace, NETWORK.format(tag, 1), client_end
    finally:
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def vanish_and_time(server, cable, limit):
    """Opens a stream from the client namespace, pulls the cable, and returns the seconds until the
    server no longer counts the stream (failing past `limit`)."""
    namespace, _, client_end = cable
    observer = server.request("POST", "/v1/observers", {"name": "on-the-far-side", "lease": 600})[1]["id"]
    client = subprocess.Popen(["ip", "netns", "exec", namespace, "curl", "-sN", f"{server.url}/v1/observers/{observer}/events"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while server.request("GET", "/v1/stats")[1]["streams"] != 1:
            assert time.monotonic() < deadline, "the client's stream never opened"
            time.sleep(0.05)
        ip("link", "set", client_end, "down", namespace=namespace)
        pulled = time.monotonic()
        while server.request("GET", "/v1/stats")[1]["streams"] != 0:
            assert time.monotonic() - pulled < limit, f"the stream still counted {limit} s after the cable was pulled"
            time.sleep(0.1)
        elapsed = time.monotonic() - pulled
        detail = server.request("GET", f"/v1/observers/{observer}")[1]
        assert detail["streams"] == 0 and detail["expiresAt"] is not None, "the lease must count again"
        return elapsed
    finally:
        client.kill()
        client.wait()


def test_a_vanished_peer_is_dropped_after_one_heartbeat_and_the_peer_timeout(server_factory, cable):
    server = server_factory("--allow-open", "--heartbeat-interval", "1", "--peer-timeout", "3", host=cable[1]).start()
    elapsed = vanish_and_time(server, cable, limit=8)
    assert elapsed >= 2, f"noticed after {elapsed:.1f} s: before TCP could have given up, so not by the timeout"


def test_with_the_default_settings_a_vanished_peer_is_dropped_within_60_s(server_factory, cable):
    server = server_factory("--allow-open", host=cable[1]).start()
    elapsed = vanish_and_time(server, cable, limit=60)
    print(f"vanished peer noticed after {elapsed:.1f} s with the default settings")


def cpu_seconds(process):
    with open(f"/proc/{process.pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_idle_streams_cost_no_cpu(server_factory):
    """500 parked streams, each socket watched for hang-up: between heartbeats the server sleeps."""
    server = server_factory("--heartbeat-interval", "15").start()
    started = time.monotonic()
    observer = server.request("POST", "/v1/observers", {"name": "idle", "lease": 600})[1]["id"]
    streams = []
    for _ in range(500):
        stream = socket.create_connection((server.host, server.port))
        stream.sendall(f"GET /v1/observers/{observer}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        streams.append(stream)
    deadline = time.monotonic() + 10
    while server.request("GET", "/v1/stats")[1]["streams"] != 500:
        assert time.monotonic() < deadline, "the streams did not all open"
        time.sleep(0.05)
    time.sleep(0.5)
    before = cpu_seconds(server.process)
    time.sleep(5)
    used = cpu_seconds(server.process) - before
    for stream in streams:
        stream.close()
    assert time.monotonic() - started < 15, "the window reached the first heartbeat round: not idle"
    assert used <= 0.05, f"500 idle streams used {used:.2f} s of CPU in 5 s"
