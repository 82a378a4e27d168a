#!/usr/bin/env python3
"""W8, deliveries to URLs against SSE (`make bench-webhooks`; issue 45, contract section 16).

Every measurement starts a fresh server pinned to CPU 0 (this script, its receiver, its SSE
readers and its writers share CPU 1):

  100 objects o0…o99 {"n": 0}. For each, one SSE observer (one stream) and one delivering
  observer, both observing `n` with ["new"]; the delivering observers push to a receiver in this
  process that answers 204 at once (keep-alive). Writers PUT o<i>.n = CLOCK_MONOTONIC ns (round
  robin over the objects) from 16 keep-alive connections.

  throughput  closed loop for --seconds: every writer sends its next PUT when the last is answered.
              Events/s = events received by each side during the write phase (deliveries counted
              once per (observer, id)), at maxBatch 1 and at maxBatch 100. Target: webhooks ≥ 0.8× SSE.
  dead        open loop at --rate writes/s, maxBatch 1: once with every URL healthy, once with
              o0's delivering observer pushing to a receiver that accepts and never answers (timeout
              2 s, so it retries all along). Latency = receipt - the value written, per event, over
              o1…o99's deliveries. Target: p99 with the dead endpoint ≤ 1.2× without.

Writes a Markdown section "## Deliveries to URLs, W8 (issue 45)" to --out; with --into, also into
that file in place of the section of the same title.
"""
import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

TITLE = "## Deliveries to URLs, W8 (issue 45)"
OBJECTS = 100
WRITERS = 16


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, binary):
        self.port = free_port()
        pin = ["taskset", "-c", "0"] if os.cpu_count() and os.cpu_count() > 1 else []
        self.process = subprocess.Popen(
            pin + [binary, "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
                   "--webhook-hosts", "127.0.0.1:*", "--public-dir", "Public"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.call("GET", "/healthz")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def call(self, method, path, body=None):
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


class Tally:
    """Events received by one side: counts within the write phase and latencies (ns)."""

    def __init__(self):
        self.seen = set()
        self.latencies = {}  # observer key → [ns]
        self.in_phase = 0
        self.phase_end = None

    def record(self, key, event_id, written_ns):
        if (key, event_id) in self.seen:
            return
        self.seen.add((key, event_id))
        now = time.monotonic_ns()
        if self.phase_end is None or now <= self.phase_end:
            self.in_phase += 1
        self.latencies.setdefault(key, []).append(now - written_ns)


async def receiver(tally, hang=False):
    async def serve(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                body = json.loads(await reader.readexactly(length))
                if hang:
                    await asyncio.sleep(3600)
                for event in body["events"]:
                    if event["event"] == "change" and "id" in event:
                        tally.record(body["observer"], event["id"], event["data"]["new"])
                writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def sse_reader(port, observer, tally, ready):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /v1/observers/{observer}/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
                 .encode())
    await reader.readuntil(b"\r\n\r\n")
    ready.set()
    event_id = None
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            if line.startswith(b"id: "):
                event_id = line[4:].strip().decode()
            elif line.startswith(b"data: ") and event_id is not None:
                data = json.loads(line[6:])
                if "new" in data:
                    tally.record(observer, event_id, data["new"])
                event_id = None
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def writer_loop(port, index, stop_at, interval):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent, target = 0, index
    next_at = time.monotonic()
    while time.monotonic() < stop_at:
        if interval:
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        body = json.dumps({"value": time.monotonic_ns()}).encode()
        writer.write(f"PUT /v1/objects/o{target % OBJECTS}/values/n HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        await reader.readexactly(length)
        sent += 1
        target += WRITERS
    writer.close()
    return sent


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else float("nan")


async def measure(binary, max_batch, seconds, rate=None, dead=False):
    server = Server(binary)
    hooks, sse = Tally(), Tally()
    healthy, healthy_port = await receiver(hooks)
    dead_server, dead_port = await receiver(Tally(), hang=True)
    tasks = []
    try:
        ids = {}
        for i in range(OBJECTS):
            server.call("POST", "/v1/objects", {"id": f"o{i}", "values": {"n": 0}})
            url = f"http://127.0.0.1:{dead_port if dead and i == 0 else healthy_port}/hook"
            pushed = server.call("POST", "/v1/observers", {"deliver": {"url": url, "maxBatch": max_batch,
                                                                        "timeout": 2}})["id"]
            streamed = server.call("POST", "/v1/observers", {"lease": 600})["id"]
            for observer in (pushed, streamed):
                server.call("POST", f"/v1/observers/{observer}/observations",
                            {"object": f"o{i}", "keyPath": "n", "options": ["new"]})
            ids[i] = (pushed, streamed)
        for i in range(OBJECTS):
            ready = asyncio.Event()
            tasks.append(asyncio.create_task(sse_reader(server.port, ids[i][1], sse, ready)))
            await ready.wait()
        await asyncio.sleep(1)
        cpu_before, started = cpu_seconds(server.process.pid), time.monotonic()
        stop_at = started + seconds
        for tally in (hooks, sse):
            tally.phase_end = time.monotonic_ns() + int(seconds * 1e9)
        interval = WRITERS / rate if rate else None
        sent = sum(await asyncio.gather(*(writer_loop(server.port, w, stop_at, interval) for w in range(WRITERS))))
        elapsed = time.monotonic() - started
        cpu = cpu_seconds(server.process.pid) - cpu_before
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (len(hooks.seen) < sent - (sent // OBJECTS + 1 if dead else 0)
                                               or len(sse.seen) < sent):
            await asyncio.sleep(0.1)
        dead_key = ids[0][0] if dead else None
        hook_latencies = [v for key, values in hooks.latencies.items() if key != dead_key for v in values]
        sse_latencies = [v for key, values in sse.latencies.items() if key != ids[0][1] or not dead for v in values]
        return {
            "maxBatch": max_batch, "dead": dead, "writes": sent, "seconds": round(elapsed, 2),
            "writes_per_s": round(sent / elapsed), "hooks_per_s": round(hooks.in_phase / elapsed),
            "sse_per_s": round(sse.in_phase / elapsed), "hooks_total": len(hooks.seen), "sse_total": len(sse.seen),
            "hook_p50_ms": round(percentile(hook_latencies, 50) / 1e6, 2),
            "hook_p99_ms": round(percentile(hook_latencies, 99) / 1e6, 2),
            "sse_p50_ms": round(percentile(sse_latencies, 50) / 1e6, 2),
            "sse_p99_ms": round(percentile(sse_latencies, 99) / 1e6, 2),
            "server_cpu_pct": round(100 * cpu / elapsed),
        }
    finally:
        for task in tasks:
            task.cancel()
        healthy.close()
        dead_server.close()
        server.stop()


def section(rows, args):
    lines = [TITLE, "",
             f"`python3 bench/webhooks.py` on {platform.node()}, {datetime.date.today()}, {os.cpu_count()} CPUs "
             f"(server on CPU 0; receiver, SSE readers and writers, all in one Python process, on CPU 1); "
             f"binary `{args.binary}`. 100 objects, each observed by one SSE observer and one delivering "
             "observer; writers PUT the monotonic time; latency = receipt - that time.", "",
             "| run | maxBatch | dead URL | writes/s | webhook events/s | SSE events/s | ratio | webhook p50 / p99 ms "
             "| SSE p50 / p99 ms | server CPU % |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ratio = row["hooks_per_s"] / row["sse_per_s"] if row["sse_per_s"] else float("nan")
        lines.append(f"| {row['run']} | {row['maxBatch']} | {'yes' if row['dead'] else 'no'} | {row['writes_per_s']} "
                     f"| {row['hooks_per_s']} | {row['sse_per_s']} | {ratio:.2f} | {row['hook_p50_ms']} / "
                     f"{row['hook_p99_ms']} | {row['sse_p50_ms']} / {row['sse_p99_ms']} | {row['server_cpu_pct']} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=".build/release/obs-server")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=float, default=500, help="writes/s of the open-loop (dead URL) runs")
    parser.add_argument("--runs", type=int, default=3, help="alternating pairs of dead-URL latency runs")
    parser.add_argument("--out", default="build/bench-webhooks.md")
    parser.add_argument("--into")
    args = parser.parse_args()
    if os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    rows = []
    plan = [("throughput", 1, None, False), ("throughput", 100, None, False)]
    for index in range(args.runs):  # the dead-URL pair alternates, so a noisy minute hits both alike
        plan += [(f"latency {index + 1}", 1, args.rate, False), (f"latency {index + 1}", 1, args.rate, True)]
    for run, max_batch, rate, dead in plan:
        row = asyncio.run(measure(args.binary, max_batch, args.seconds, rate, dead))
        row["run"] = run
        print(json.dumps(row), flush=True)
        rows.append(row)
    text = section(rows, args)
    healthy = [r["hook_p99_ms"] for r in rows if r["run"].startswith("latency") and not r["dead"]]
    beside = [r["hook_p99_ms"] for r in rows if r["run"].startswith("latency") and r["dead"]]
    if healthy and beside:
        text += (f"\nMedian webhook p99 of o1…o99: {statistics.median(healthy)} ms without the dead URL, "
                 f"{statistics.median(beside)} ms beside it ({statistics.median(beside) / statistics.median(healthy):.2f}x).\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    if args.into:
        existing = Path(args.into).read_text()
        pattern = re.compile(rf"^{re.escape(TITLE)}\n.*?(?=\n## |\Z)", re.S | re.M)
        existing = pattern.sub(lambda _: text.rstrip() + "\n", existing, count=1) if pattern.search(existing) \
            else existing.rstrip() + "\n\n" + text
        Path(args.into).write_text(existing)
    print(text)


if __name__ == "__main__":
    main()
