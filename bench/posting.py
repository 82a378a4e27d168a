#!/usr/bin/env python3
"""Posting benchmark (`make bench`): NSNotificationCenter fan-out over SSE.

For each configuration, a fresh server pinned to CPU 0; subscribers are observers with one
subscription to name n<s % 1000> and an SSE stream each; extra subscriptions to *other*
names (no stream) show that a posting's cost does not grow with them. Writers post to
random names at full rate for 10 s (32 closed-loop connections) with the shared bench's C
epoll client (obsclient, on CPU 1), which measures every delivery's latency.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import time
from pathlib import Path

PORT = 18491
NAMES = 1000


def call(c, method, path, body):
    c.request(method, path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else {}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(binary, client, streaming, extra, duration, workdir):
    server = subprocess.Popen(["taskset", "-c", "0", binary, "--host", "127.0.0.1", "--port", str(PORT),
                               "--log-level", "warning", "--max-registrations-per-observer", "100000"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
                c.request("GET", "/healthz")
                c.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        ids = []
        for s in range(streaming):
            oid = call(c, "POST", "/v1/observers", {"lease": 3600})["id"]
            call(c, "POST", f"/v1/observers/{oid}/subscriptions", {"name": f"n{s % NAMES}"})
            ids.append(oid)
        if extra:
            holder = call(c, "POST", "/v1/observers", {"lease": 3600})["id"]
            for i in range(extra):
                call(c, "POST", f"/v1/observers/{holder}/subscriptions", {"name": f"other-{i % 10000}", "object": f"o{i}"})
        c.close()
        subvars = workdir / "posting-subvars.txt"
        subvars.write_text("\n".join(ids) + "\n")
        cmd = ["taskset", "-c", "1", client, "--host", "127.0.0.1", "--port", str(PORT), "--subs", str(streaming),
               "--sub-keys", str(NAMES), "--key-pattern", "n{I}", "--framing", "sse", "--ready", "headers",
               "--marker", "bts", "--marker-after", '"userInfo"', "--sub-method", "GET",
               "--sub-path", "/v1/observers/{V}/events", "--sub-body", "", "--sub-header", "Accept: text/event-stream",
               "--sub-vars", str(subvars), "--writers", "32", "--write-keys", str(NAMES), "--write-method", "POST",
               "--write-path", "/v1/notifications", "--write-header", "Content-Type: application/json",
               "--write-body", '{"name":"{KEY}","userInfo":{VALUE}}', "--duration", str(duration), "--settle", "0.5",
               "--drain-max", "30", "--drain-idle", "5", "--connect-timeout", "60", "--connect-window", "256"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        start_cpu = start_t = None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("WRITE_START"):
                start_cpu, start_t = cpu_seconds(server.pid), time.time()
            if line.startswith("WRITE_END") and start_cpu is not None:
                server_cpu = (cpu_seconds(server.pid) - start_cpu) / (time.time() - start_t) * 100
        proc.wait(timeout=duration + 200)
        result = json.loads([l for l in lines if l.startswith("{")][-1])
        result["server_cpu_pct"] = server_cpu
        result["subscriptions"] = streaming + extra
        result["cmd"] = " ".join(a if re.match(r"^[\w/.:{}=-]+$", a) else f"'{a}'" for a in cmd[3:])
        return result
    finally:
        server.terminate()
        server.wait(timeout=15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--client", default="../shared/bench/client/obsclient")
    ap.add_argument("--out", default="build/bench-posting.md")
    ap.add_argument("--duration", type=int, default=10)
    args = ap.parse_args()
    workdir = Path("build")
    workdir.mkdir(exist_ok=True)
    configs = [(1000, 0), (10000, 0), (10000, 90000)]
    rows = []
    for streaming, extra in configs:
        r = run(args.binary, args.client, streaming, extra, args.duration, workdir)
        rows.append(r)
        print(f"{r['subscriptions']} subscriptions ({streaming} streaming): {r['write_rate']:.0f} postings/s, "
              f"{r['deliveries']}/{r['expected_deliveries']} delivered, p99 {r['lat_p99_ms']} ms", flush=True)
    lines = ["## Posting (notification center)", "",
             f"{NAMES:,} names; each streaming subscriber is an observer with one subscription to name n<s mod {NAMES}> "
             f"and an SSE stream; extra subscriptions are to other names, without streams. 32 closed-loop writers "
             f"post to random names for {args.duration} s (obsclient from ../shared/bench on CPU 1; server on CPU 0).", "",
             "| subscriptions | streaming | postings/s | delivered | expected | deliveries/s | p50 ms | p99 ms | server CPU% | client CPU% |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['subscriptions']:,} | {r['subs_ready']:,} | {r['write_rate']:,.0f} | {r['deliveries']:,} | "
                     f"{r['expected_deliveries']:,} | {r['delivery_rate']:,.0f} | {r['lat_p50_ms']} | {r['lat_p99_ms']} | "
                     f"{r['server_cpu_pct']:.0f} | {r['client_cpu_write_pct']:.0f} |")
    lines += ["", f"Client command (10,000 subscriptions): `{rows[1]['cmd']}`", ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
