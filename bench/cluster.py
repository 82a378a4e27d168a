#!/usr/bin/env python3
"""The cluster bench (`make bench-cluster`, part of `make bench`): what a node costs on this
2-core machine, after ../shared/design/CLUSTER-NOTES.md section 10.

- B3, cluster tax: ../shared/bench's W1, W2 (S = 1,000) and W3 against one node started with
  `--cluster` (a fresh database per run), in memory and with `--data-dir` in the same session.
- B1, cost split: S = 1,000 subscribers on one key, 20 writes/s for 10 s; CPU seconds per node
  with 1 node serving all the streams, then with 2 nodes serving 500 each. Every node applies
  every write and computes every record; only delivery is split.
- B5, failover: the 2-node setup again; `kill -9` one node half way; its subscribers resume on
  the other with `Last-Event-ID`. Time until all are back and caught up, gaps, duplicates, and
  the delivery latency p99 before and around the kill.

Nodes run on CPU 0 (`--server-cpus`), PostgreSQL and this client on CPU 1. Writes here and
deliveries are timed with the same clock (the value written is the time it was sent).
"""
import argparse
import datetime
import hashlib
import http.client
import json
import os
import platform
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "Tests" / "blackbox"))

from postgres import Postgres  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None
    finally:
        connection.close()


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def create_database(url, name):
    """A new, empty database `name` (one left by an earlier run is dropped first)."""
    for statement in (f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'):
        subprocess.run(["psql", url, "-XAtq", "-c", statement], check=True, capture_output=True)
    return url.rsplit("/", 1)[0] + "/" + name


class Node:
    def __init__(self, binary, url, name, cpus, port=None):
        self.port = port or free_port()
        self.name = name
        self.process = subprocess.Popen(
            ["taskset", "-c", cpus, binary, "--host", "127.0.0.1", "--port", str(self.port), "--cluster", url,
             "--node-id", name, "--log-level", "warning", "--heartbeat-interval", "5"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if call(self.port, "GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"node {name} did not become healthy")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


class Subscriber:
    """One observer's SSE stream over a raw socket (HTTP/1.0: no chunking); records ids and latencies."""

    def __init__(self, observer, port):
        self.observer, self.port = observer, port
        self.last_id, self.ids, self.latencies, self.buffer = 0, [], [], b""
        self.socket, self.connected_at = None, None

    def connect(self, selector, port=None):
        self.port = port or self.port
        self.socket = socket.create_connection(("127.0.0.1", self.port))
        self.socket.setblocking(False)
        resume = f"Last-Event-ID: {self.last_id}\r\n" if self.last_id else ""
        self.socket.sendall(f"GET /v1/observers/{self.observer}/events HTTP/1.0\r\nHost: bench\r\n"
                            f"Accept: text/event-stream\r\n{resume}\r\n".encode())
        self.buffer, self.headers_done = b"", False
        selector.register(self.socket, selectors.EVENT_READ, self)

    def read(self, selector):
        """Reads what arrived; False once the stream ended."""
        try:
            data = self.socket.recv(65536)
        except (ConnectionResetError, BlockingIOError):
            data = b""
        if not data:
            selector.unregister(self.socket)
            self.socket.close()
            self.socket = None
            return False
        now = time.time()
        self.buffer += data
        if not self.headers_done:
            if b"\r\n\r\n" not in self.buffer:
                return True
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.headers_done = True
            self.connected_at = time.monotonic()
            if b" 200 " not in head.split(b"\r\n", 1)[0]:
                raise SystemExit(f"stream refused: {head[:200]!r}")
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            event_id = re.search(rb"^id: (\d+)", event, re.M)
            sent = re.search(rb'"new":([\d.]+)', event)
            if event_id:
                self.last_id = int(event_id.group(1))
                self.ids.append(self.last_id)
                if sent:
                    self.latencies.append((now, now - float(sent.group(1))))
        return True


class Fleet:
    """Subscribers read by one thread; `resume` maps a node's port to where its streams go next."""

    def __init__(self, subscribers):
        self.subscribers = subscribers
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.resume = {}
        self.ended_at = {}
        for subscriber in subscribers:
            subscriber.connect(self.selector)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                subscriber = key.data
                if not subscriber.read(self.selector):
                    self.ended_at.setdefault(subscriber.port, time.monotonic())
                    target = self.resume.get(subscriber.port)
                    if target:
                        for attempt in range(50):
                            try:
                                subscriber.connect(self.selector, target)
                                break
                            except OSError:
                                time.sleep(0.1)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=10)


def write_loop(port, obj, rate, seconds, on_half=None):
    """PUTs the send time as the value at `rate` per second; calls `on_half` half way."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    count, start = int(rate * seconds), time.monotonic()
    for n in range(count):
        if on_half and n == count // 2:
            on_half()
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        connection.request("PUT", f"/v1/objects/{obj}/values/name", body=json.dumps({"value": time.time()}),
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"write {n} answered {response.status}")
    connection.close()
    return count


def subscribers_on(port, obj, count, nodes):
    """`count` observers of `obj`.name; their streams open on the nodes in turn."""
    status, _ = call(port, "POST", "/v1/objects", {"id": obj, "values": {"name": 0}})
    assert status == 201, status
    subscribers = []
    for n in range(count):
        _, observer = call(port, "POST", "/v1/observers", {"lease": 600})
        call(port, "POST", f"/v1/observers/{observer['id']}/observations",
             {"object": obj, "keyPath": "name", "options": ["new"]})
        subscribers.append(Subscriber(observer["id"], nodes[n % len(nodes)].port))
    return subscribers


def wait_all(subscribers, writes, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(len(s.ids) >= writes for s in subscribers):
            return True
        time.sleep(0.05)
    return False


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * fraction))] * 1000 if values else float("nan")


def cost_split(args, postgres, nodes_count):
    url = create_database(postgres.url, f"split{nodes_count}_{os.getpid()}")
    nodes = [Node(args.binary, url, f"n{k + 1}", args.server_cpus) for k in range(nodes_count)]
    try:
        subscribers = subscribers_on(nodes[0].port, "split", args.subs, nodes)
        fleet = Fleet(subscribers)
        time.sleep(1)
        before = [cpu_seconds(node.process.pid) for node in nodes]
        writes = write_loop(nodes[0].port, "split", args.rate, args.seconds)
        delivered = wait_all(subscribers, writes)
        used = [cpu_seconds(node.process.pid) - b for node, b in zip(nodes, before)]
        fleet.stop()
        latencies = [latency for s in subscribers for _, latency in s.latencies]
        missing = sum(max(0, writes - len(s.ids)) for s in subscribers)
        return {"nodes": nodes_count, "cpu": used, "writes": writes, "missing": missing, "all": delivered,
                "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)}
    finally:
        for node in nodes:
            node.stop()


def failover(args, postgres):
    url = create_database(postgres.url, f"failover_{os.getpid()}")
    nodes = [Node(args.binary, url, f"n{k + 1}", args.server_cpus) for k in range(2)]
    victim, survivor = nodes
    try:
        subscribers = subscribers_on(survivor.port, "fail", args.subs, nodes)
        fleet = Fleet(subscribers)
        fleet.resume[victim.port] = survivor.port
        time.sleep(1)
        killed = {}

        def kill():
            killed["at"] = time.monotonic()
            killed["wall"] = time.time()
            victim.process.send_signal(signal.SIGKILL)

        writes = write_loop(survivor.port, "fail", args.rate, args.seconds, on_half=kill)
        caught_up = wait_all(subscribers, writes)
        fleet.stop()
        moved = [s for s in subscribers if s.port == survivor.port and s.connected_at and s.connected_at >
                 killed["at"]]
        back = max((s.connected_at for s in moved), default=killed["at"]) - killed["at"]
        gaps = sum(1 for s in subscribers for a, b in zip(s.ids, s.ids[1:]) if b > a + 1)
        duplicates = sum(1 for s in subscribers for a, b in zip(s.ids, s.ids[1:]) if b <= a)
        before = [lat for s in subscribers for at, lat in s.latencies if at < killed["wall"]]
        around = [lat for s in subscribers for at, lat in s.latencies if killed["wall"] <= at < killed["wall"] + 5]
        return {"moved": len(moved), "back": back, "gaps": gaps, "duplicates": duplicates, "all": caught_up,
                "missing": sum(max(0, writes - len(s.ids)) for s in subscribers), "writes": writes,
                "p99_before": percentile(before, 0.99), "p99_around": percentile(around, 0.99)}
    finally:
        for node in nodes:
            if node.process.poll() is None:
                node.stop()


def tax(args, postgres, out):
    """../shared/bench W1-W3 against one --cluster node (fresh database per run), memory and --data-dir."""
    bench = ROOT.parent / "shared" / "bench" / "bench.py"
    if not bench.exists():
        return None
    common = f"{args.binary} --host 127.0.0.1 --port {{port}} --log-level warning"
    modes = {
        "memory": common,
        "durable": common + " --data-dir {data}",
        "cluster": f"{sys.executable} {HERE / 'cluster.py'} node {postgres.url} {{data}} " + common,
    }
    tables = {}
    for mode, command in modes.items():
        directory = out / f"tax-{mode}"
        # PostgreSQL is part of the cluster under test: its CPU (on the client's core) is not noise.
        noise = ["--max-foreign", "100"] if mode == "cluster" else []
        subprocess.run([sys.executable, str(bench), "run", "--targets", "obsserver", "--workloads", "w1,w2,w3",
                        "--w2-subs", "1000", "--runs", str(args.runs), "--out", str(directory), *noise],
                       env={**os.environ, "BENCH_OBS_CMD": command}, check=True, stdout=subprocess.DEVNULL)
        tables[mode] = (directory / "table.md").read_text()
    return tables


FIGURE = {"W1": "req/s", "W2": "p99 ms", "W3": "delivered ev/s"}


def medians(table):
    """{workload: its headline figure, 'median (range)'} from a shared bench table.md."""
    found = {}
    for section in re.split(r"^### ", table, flags=re.M)[1:]:
        name = section.split("\n", 1)[0].strip()
        rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
                if line.startswith("|") and not line.startswith("|---")]
        if name in FIGURE and len(rows) > 1 and FIGURE[name] in rows[0]:
            column = rows[0].index(FIGURE[name])
            found[name] = next((row[column] for row in rows[1:] if row[0] == "obsserver"), "–")
    return found


def node_main(argv):
    """`cluster.py node URL DATA BINARY ARGS…`: a node on a fresh database (named after DATA), as the
    shared bench starts a fresh server on a fresh data directory per run."""
    url, data, binary, rest = argv[0], argv[1], argv[2], argv[3:]
    name = "tax_" + hashlib.sha1(data.encode()).hexdigest()[:12]
    cluster = create_database(url, name)
    os.execv(binary, [binary, *rest, "--cluster", cluster, "--node-id", "bench"])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "node":
        return node_main(sys.argv[2:])
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build" / "release" / "obs-server"))
    parser.add_argument("--out", default=str(ROOT / "build" / "bench-cluster"))
    parser.add_argument("--subs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=1, help="runs of each shared workload (B3)")
    parser.add_argument("--server-cpus", default="0")
    parser.add_argument("--client-cpus", default="1")
    parser.add_argument("--skip-tax", action="store_true")
    args = parser.parse_args()
    os.sched_setaffinity(0, {int(c) for c in args.client_cpus.split(",")})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    postgres = Postgres(free_port(), cpus=args.client_cpus).start()
    try:
        split = [cost_split(args, postgres, count) for count in (1, 2)]
        for row in split:
            print(f"B1 {row['nodes']} node(s): CPU s per node {[round(c, 2) for c in row['cpu']]}, "
                  f"p99 {row['p99']:.1f} ms, missing {row['missing']}", flush=True)
        fail = failover(args, postgres)
        print(f"B5 failover: {fail}", flush=True)
        tables = None if args.skip_tax else tax(args, postgres, out)
    finally:
        postgres.remove()

    one, two = split
    share = max(two["cpu"]) / one["cpu"][0]
    lines = [
        "## Cluster (`make bench-cluster`)", "",
        f"{datetime.date.today().isoformat()}, {platform.node()}: {os.cpu_count()} cores. Nodes on CPU "
        f"{args.server_cpus}; PostgreSQL 15 (fsync on) and the client on CPU {args.client_cpus}. "
        f"`python3 bench/cluster.py --subs {args.subs} --rate {args.rate:g} --seconds {args.seconds:g}`.", "",
        f"**B1, cost split.** {args.subs} subscribers on one key, {args.rate:g} writes/s for {args.seconds:g} s "
        f"({one['writes']} writes, {one['writes'] * args.subs:,} deliveries):", "",
        "| nodes | streams per node | CPU s per node | delivery p50 / p99 ms | undelivered |",
        "|---:|---:|---|---|---:|",
    ]
    for row in split:
        lines.append(f"| {row['nodes']} | {args.subs // row['nodes']} | "
                     f"{' / '.join(f'{c:.2f}' for c in row['cpu'])} | {row['p50']:.1f} / {row['p99']:.1f} | "
                     f"{row['missing']} |")
    lines += ["", f"With two nodes the busier one uses **{share:.2f}×** the single node's CPU (every node applies "
              "every write and computes every record; delivery is split).", "",
              f"**B5, failover.** Two nodes, {args.subs} subscribers split over them; `kill -9` of one half way "
              f"through {fail['writes']} writes: {fail['moved']} streams resumed on the other with `Last-Event-ID`, "
              f"all back {fail['back']:.2f} s after the kill; gaps **{fail['gaps']}**, duplicates "
              f"**{fail['duplicates']}**, undelivered {fail['missing']}; delivery p99 {fail['p99_before']:.1f} ms "
              f"before the kill, {fail['p99_around']:.1f} ms in the 5 s after it.", ""]
    if tables:
        figures = {mode: medians(table) for mode, table in tables.items()}
        lines += [f"**B3, cluster tax on one node** (../shared/bench, obsserver only, {args.runs} run(s) each, "
                  "median (range); W1 writes/s, W2 p99 ms, W3 events/s):", "",
                  "| workload | memory | `--data-dir` | `--cluster` |", "|---|---|---|---|"]
        for workload in sorted(set().union(*figures.values())):
            lines.append(f"| {workload} | " + " | ".join(figures[m].get(workload, "–")
                                                         for m in ("memory", "durable", "cluster")) + " |")
        lines.append("")
    (out / "cluster.md").write_text("\n".join(lines))
    print("\n".join(lines))
    if fail["gaps"] or fail["duplicates"] or not fail["all"] or not all(row["all"] for row in split):
        sys.exit(1)


if __name__ == "__main__":
    main()
