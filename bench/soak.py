#!/usr/bin/env python3
"""`make soak`: 30 minutes of mixed load against the release server, RSS printed over time.

The server runs durable (`--data-dir` in a temporary directory) with its default limits.
The load, all at once:
  writers        small and large values, PATCHes and to-many mutations on 200 objects
  object churn   objects created, observed (some by retaining observers) and deleted
  observer churn observers come and go every 0.2 s: registrations, a subscription, a stream
                 for a few seconds, then deleted, left to expire, or kept alive a while
  readers        10 long-lived observers whose streams reconnect with Last-Event-ID
  stalled        streams that never read (cut off when their buffers fill), reopened
  notifications  now / asap / idle postings, with coalescing
  reads          objects, pages, observers, /metrics
Every minute it prints RSS, CPU and the service's figures; at the end a Markdown table goes
to build/soak.md and into BENCHMARKS.md (the "Soak" section), with a verdict: flat when the
RSS of the last third stays within 10 % (and 8 MiB) of the middle third's highest.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import random
import re
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class Client:
    """One keep-alive connection; reconnects when the server closed it."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def request(self, method, path, body=None, timeout=30):
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            try:
                data = json.dumps(body) if body is not None else None
                self.connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                raw = response.read()
                return response.status, (json.loads(raw) if raw and raw[:1] in b"{[" else raw)
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


class Soak:
    def __init__(self, port, minutes):
        self.port = port
        self.stop = threading.Event()
        self.deadline = time.monotonic() + minutes * 60
        self.statuses = Counter()
        self.lock = threading.Lock()
        self.gaps = 0
        self.resets = 0

    def count(self, status):
        with self.lock:
            self.statuses[status] += 1

    def call(self, client, method, path, body=None):
        status, answer = client.request(method, path, body)
        self.count(status)
        return status, answer

    def running(self):
        return not self.stop.is_set() and time.monotonic() < self.deadline

    # -- load ------------------------------------------------------------------------------

    def writer(self, seed):
        rng, client = random.Random(seed), Client(self.port)
        while self.running():
            obj = f"o{rng.randrange(200)}"
            roll = rng.random()
            if roll < 0.7:
                self.call(client, "PUT", f"/v1/objects/{obj}/values/n", {"value": rng.randrange(1000)})
            elif roll < 0.8:
                size = rng.randrange(8_000, 64_000)
                self.call(client, "PUT", f"/v1/objects/{obj}/values/blob", {"value": "b" * size})
            elif roll < 0.9:
                self.call(client, "PATCH", f"/v1/objects/{obj}",
                          {"values": {"n": rng.randrange(1000), "label": f"l{rng.randrange(50)}", "flag": rng.random() < 0.5}})
            else:
                status, answer = self.call(client, "GET", f"/v1/objects/{obj}/values/list.@count")
                length = answer["value"] if status == 200 else 0
                if length >= 50 or (length > 0 and rng.random() < 0.5):
                    self.call(client, "POST", f"/v1/objects/{obj}/values/list/mutations", {"kind": "removal", "indexes": [0]})
                else:
                    self.call(client, "POST", f"/v1/objects/{obj}/values/list/mutations",
                              {"kind": "insertion", "indexes": [length], "values": [rng.randrange(100)]})
            time.sleep(0.001)

    def object_churn(self):
        rng, client, serial = random.Random(7), Client(self.port), 0
        _, keeper = self.call(client, "POST", "/v1/observers", {"name": "retainer", "retainObserved": True, "lease": 86400})
        while self.running():
            serial += 1
            obj = f"tmp{serial}"
            self.call(client, "POST", "/v1/objects", {"id": obj, "values": {"v": serial, "ref": {"$ref": "o1"}}})
            if serial % 3 == 0:
                self.call(client, "POST", f"/v1/observers/{keeper['id']}/observations", {"object": obj, "keyPath": "v"})
            self.call(client, "PUT", f"/v1/objects/{obj}/values/v", {"value": serial + 1})
            self.call(client, "DELETE", f"/v1/objects/{obj}")
            if serial % 3 == 0:
                self.call(client, "DELETE", f"/v1/observers/{keeper['id']}/observations?object={obj}")
            self.call(client, "POST", f"/v1/observers/{keeper['id']}/keepalive")
            time.sleep(0.05)

    def observer_churn(self):
        rng, client = random.Random(11), Client(self.port)
        while self.running():
            _, observer = self.call(client, "POST", "/v1/observers",
                                    {"lease": rng.randrange(2, 10), "replay": rng.choice([64, 256, 1024])})
            oid = observer["id"]
            paths = rng.sample(["n", "label", "flag", "list", "list.@count", "blob"], rng.randrange(1, 5))
            self.call(client, "POST", f"/v1/observers/{oid}/observations",
                      {"object": f"o{rng.randrange(200)}", "keyPaths": paths, "options": ["new", "old", "initial"]})
            self.call(client, "POST", f"/v1/observers/{oid}/subscriptions", {"name": rng.choice(["Ping", "Pong"])})
            threading.Thread(target=self.read_stream, args=(f"/v1/observers/{oid}/events", rng.uniform(1, 5)),
                             daemon=True).start()
            fate = rng.random()
            if fate < 0.4:
                threading.Timer(rng.uniform(2, 6), lambda oid=oid: self.call(Client(self.port), "DELETE", f"/v1/observers/{oid}")).start()
            elif fate < 0.6:
                for _ in range(3):
                    self.call(client, "POST", f"/v1/observers/{oid}/keepalive")
            time.sleep(0.2)

    def read_stream(self, path, seconds, last_id=None):
        """Reads a stream for `seconds` (or until it ends), checking that its ids have no gaps
        (but after a `reset`); returns the last id seen, to resume with."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        headers = {"Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = str(last_id)
        end = time.monotonic() + seconds
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            while time.monotonic() < end and self.running():
                connection.sock.settimeout(max(0.1, end - time.monotonic()))
                line = response.readline()  # decodes the chunked body
                if not line:
                    break
                if line.startswith(b"id: "):
                    number = int(line[4:])
                    if last_id is not None and number != last_id + 1:
                        with self.lock:
                            self.gaps += 1
                    last_id = number
                elif line.startswith(b"event: reset"):
                    with self.lock:
                        self.resets += 1
                    last_id = None  # live ids go on from wherever the buffer is now
        except (OSError, http.client.HTTPException, ValueError):
            pass  # timed out, or the server ended the stream
        finally:
            connection.close()
        return last_id

    def long_reader(self, index):
        client = Client(self.port)
        _, observer = self.call(client, "POST", "/v1/observers", {"name": f"reader{index}", "lease": 60})
        rng = random.Random(100 + index)
        for obj in rng.sample(range(200), 10):
            self.call(client, "POST", f"/v1/observers/{observer['id']}/observations",
                      {"object": f"o{obj}", "keyPaths": ["n", "label"], "options": ["new", "old"]})
        last_id = None
        while self.running():
            last_id = self.read_stream(f"/v1/observers/{observer['id']}/events", rng.uniform(20, 60), last_id)
        self.call(client, "DELETE", f"/v1/observers/{observer['id']}")

    def stalled(self):
        client = Client(self.port)
        while self.running():
            _, observer = self.call(client, "POST", "/v1/observers", {"lease": 60, "replay": 100_000})
            self.call(client, "POST", f"/v1/observers/{observer['id']}/observations",
                      {"object": "o1", "keyPaths": ["n", "blob"], "options": ["new", "old"]})
            sockets = []
            for path in (f"/v1/observers/{observer['id']}/events", "/v1/events"):
                stream = socket.socket()
                stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                stream.connect(("127.0.0.1", self.port))
                stream.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                sockets.append(stream)
            self.stop.wait(30)
            for stream in sockets:
                stream.close()
            self.call(client, "DELETE", f"/v1/observers/{observer['id']}")

    def notifications(self):
        rng, client = random.Random(13), Client(self.port)
        while self.running():
            style = rng.choice(["now", "now", "asap", "idle"])
            body = {"name": rng.choice(["Ping", "Pong"]), "object": f"o{rng.randrange(20)}",
                    "userInfo": {"n": rng.randrange(100)}, "posting": style}
            if style != "now" and rng.random() < 0.5:
                body["coalesce"] = ["name"]
            self.call(client, "POST", "/v1/notifications", body)
            time.sleep(0.02)

    def reads(self):
        rng, client = random.Random(17), Client(self.port)
        while self.running():
            self.call(client, "GET", f"/v1/objects/o{rng.randrange(200)}")
            self.call(client, "GET", "/v1/objects?limit=50")
            self.call(client, "GET", "/v1/observers")
            time.sleep(0.05)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_report(rows, verdict, args, statuses, soak):
    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}"
    lines = [
        "## Soak (`make soak`)", "",
        f"{datetime.date.today().isoformat()} — {machine}. {args.minutes} minutes of mixed load on the release "
        "server with `--data-dir` and default limits (see `bench/soak.py` for the mix).", "",
        "| minute | RSS MiB | CPU % | writes/s | observers | streams | revision | dropped streams |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['minute']} | {row['rss']:.1f} | {row['cpu']:.0f} | {row['rate']:,.0f} | {row['observers']} | "
                     f"{row['streams']} | {row['revision']:,} | {row['dropped']} |")
    answers = ", ".join(f"{status}: {count:,}" for status, count in sorted(statuses.items()))
    lines += ["", f"**{verdict}**", "",
              f"Answers by status: {answers}. Stream id gaps seen by readers: {soak.gaps}; resets: {soak.resets}.", ""]
    section = "\n".join(lines)
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "soak.md").write_text(section)
    benchmarks = ROOT / "BENCHMARKS.md"
    text = benchmarks.read_text() if benchmarks.exists() else "# Benchmarks\n"
    text = re.sub(r"## Soak \(`make soak`\).*?(?=\n## |\Z)", "", text, flags=re.S).rstrip() + "\n\n" + section
    benchmarks.write_text(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build" / "release" / "obs-server"))
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--port", type=int, default=18520)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="obs-soak-") as data:
        server = subprocess.Popen([args.binary, "--port", str(args.port), "--data-dir", data, "--log-level", "warning",
                                   "--public-dir", str(ROOT / "Public")])
        try:
            run(args, server)
        finally:
            server.terminate()
            server.wait(timeout=30)


def run(args, server):
    client = Client(args.port)
    for _ in range(100):
        try:
            client.request("GET", "/healthz")
            break
        except OSError:
            time.sleep(0.1)
    for index in range(200):
        client.request("POST", "/v1/objects", {"id": f"o{index}", "values": {"n": 0, "list": [], "blob": ""}})
    soak = Soak(args.port, args.minutes)
    jobs = [(soak.writer, (seed,)) for seed in range(3)] + [(soak.object_churn, ()), (soak.observer_churn, ()),
                                                            (soak.stalled, ()), (soak.notifications, ()), (soak.reads, ())]
    jobs += [(soak.long_reader, (index,)) for index in range(10)]
    threads = [threading.Thread(target=job, args=arguments, daemon=True) for job, arguments in jobs]
    for thread in threads:
        thread.start()
    rows, started = [], time.monotonic()
    last_cpu, last_revision, last_time = cpu_seconds(server.pid), 0, started
    try:
        for minute in range(1, args.minutes + 1):
            time.sleep(max(0, started + minute * 60 - time.monotonic()))
            now, cpu = time.monotonic(), cpu_seconds(server.pid)
            stats = client.request("GET", "/v1/stats")[1]
            row = {"minute": minute, "rss": rss_mib(server.pid), "cpu": 100 * (cpu - last_cpu) / (now - last_time),
                   "rate": (stats["revision"] - last_revision) / (now - last_time), "observers": stats["observers"],
                   "streams": stats["streams"], "revision": stats["revision"], "dropped": stats["droppedStreams"]}
            rows.append(row)
            last_cpu, last_revision, last_time = cpu, stats["revision"], now
            print(f"minute {minute:3}: RSS {row['rss']:6.1f} MiB, CPU {row['cpu']:3.0f} %, {row['rate']:6.0f} revisions/s, "
                  f"{row['observers']} observers, {row['streams']} streams, {row['dropped']} dropped", flush=True)
    finally:
        soak.stop.set()
        for thread in threads:
            thread.join(timeout=70)
    third = max(1, len(rows) // 3)
    middle = max(row["rss"] for row in rows[third:2 * third] or rows)
    last = max(row["rss"] for row in rows[2 * third:] or rows)
    flat = last <= max(middle * 1.10, middle + 8)
    verdict = (f"RSS {'flat' if flat else 'GREW'}: highest {middle:.1f} MiB in the middle third, {last:.1f} MiB in "
               f"the last third.")
    print(verdict)
    write_report(rows, verdict, args, soak.statuses, soak)
    if not flat:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
