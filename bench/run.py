#!/usr/bin/env python3
"""ObsServer's own load tests (`make bench`).

Starts the release server pinned to CPU 0, loads it from CPU 1 with wrk
(64 keep-alive connections, 1 thread, 10 s per workload), and writes a
Markdown table with the machine and the exact commands to --out.

Workloads:
  put          PUT /v1/objects/o<i>/values/name, a small JSON value, i over 1,000 objects (in memory)
  get          GET /v1/objects/o<i>/values/name, same objects (in memory)
  put durable  the same PUT with --data-dir: each answer waits for its group commit (SQLite, fsync)
  tx4          W7 (issue 43): POST /v1/transactions of 4 `set`s of `name` on 4 random objects of the 1,000,
               run beside `put` by the same server (in memory, and with --data-dir as `tx4 durable`)
  tx1          the same with 1 `set`: a one-operation transaction against a PUT
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 18490


def wait_healthy(port, deadline=20.0):
    end = time.time() + deadline
    while time.time() < end:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not become healthy")


def seed(port, n=1000):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for i in range(n):
        body = json.dumps({"id": f"o{i}", "values": {"name": None}})
        c.request("POST", "/v1/objects", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        if r.status != 201:
            raise SystemExit(f"seed failed: {r.status}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_mib(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def parse_wrk(text):
    def latency(label):
        m = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            return None
        value, unit = float(m.group(1)), m.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    errors = re.search(r"Socket errors:.*", text)
    return {
        "rps": rps,
        "p50": latency("50%"),
        "p99": latency("99%"),
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(0) if errors else "",
    }


def fdatasync_latency(directory, seconds=3):
    """How long this disk takes to make a small write durable: p50, p99 and max in ms."""
    path = Path(directory) / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    block, times, index = b"x" * 16384, [], 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter()
            os.pwrite(fd, block, (index % 200) * len(block))
            os.fdatasync(fd)
            times.append((time.perf_counter() - started) * 1000)
            index += 1
    finally:
        os.close(fd)
        path.unlink()
    times.sort()
    return {"p50": times[len(times) // 2], "p99": times[int(len(times) * 0.99)], "max": times[-1]}


# The path and the operations per request of each lua script (W7's come from OBS_TX_OPS).
SCRIPTS = {"put": "/v1/objects/o<i>/values/name", "get": "/v1/objects/o<i>/values/name", "tx": "/v1/transactions"}


def workload(label):
    """(label, lua script, operations per request) of a workload's label."""
    if label.startswith("tx"):
        return label, "tx", int(label.split()[0][2:])
    return label, label.split()[0], 1


def run_server(args, server_cmd, workloads, port=PORT):
    """Starts the server (listening on `port`), seeds it, runs each workload (label) with wrk; returns
    the result rows."""
    server = subprocess.Popen(server_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        wait_healthy(port)
        seed(port)
        for label, script, ops in map(workload, workloads):
            wrk_cmd = ["taskset", "-c", args.client_cpus, "wrk", "-t1", f"-c{args.connections}",
                       f"-d{args.duration}s", "--latency", "-s", str(HERE / f"{script}.lua"),
                       f"http://127.0.0.1:{port}/"]
            cpu_before, t0 = cpu_seconds(server.pid), time.time()
            env = {**os.environ, "OBS_TX_OPS": str(ops)}
            out = subprocess.run(wrk_cmd, capture_output=True, text=True, timeout=args.duration + 60, env=env).stdout
            cpu = (cpu_seconds(server.pid) - cpu_before) / (time.time() - t0) * 100
            result = parse_wrk(out)
            shown = [a.replace(str(HERE.parent) + "/", "") for a in wrk_cmd[3:]]
            prefix = f"OBS_TX_OPS={ops} " if script == "tx" else ""
            result.update(name=label, cpu=cpu, rss=rss_mib(server.pid), cmd=prefix + " ".join(shown), ops=ops,
                          path=SCRIPTS[script])
            rows.append(result)
            print(f"{label}: {result['rps']:.0f} req/s, p50 {result['p50']} ms, p99 {result['p99']} ms, "
                  f"non-2xx {result['non2xx']}, server CPU {cpu:.0f}%", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=15)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--out", default="BENCHMARKS.md")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--peers-table", help="table.md written by ../shared/bench (make bench-peers), appended as is")
    ap.add_argument("--peers-command", default="", help="the command that produced --peers-table")
    ap.add_argument("--extra", action="append", default=[], help="more Markdown sections to append (posting.py)")
    args = ap.parse_args()

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", PORT)) == 0:
            raise SystemExit(f"port {PORT} is busy")
    server_cmd = ["taskset", "-c", args.server_cpus, args.binary, "--host", "127.0.0.1", "--port", str(PORT),
                  "--log-level", "warning"]
    rows = run_server(args, server_cmd, ["put", "get", "tx4", "tx1"])
    with tempfile.TemporaryDirectory(prefix="obs-bench-") as data_dir:
        disk = fdatasync_latency(data_dir)
        rows += run_server(args, server_cmd + ["--data-dir", data_dir], ["put durable", "tx4 durable", "tx1 durable"])

    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}"
    lines = [
        "# Benchmarks",
        "",
        f"`make bench` on {datetime.date.today().isoformat()} — {machine}.",
        f"Server: `{' '.join(server_cmd[3:])}` pinned to CPU {args.server_cpus}; wrk pinned to CPU {args.client_cpus};",
        f"{args.connections} keep-alive connections, 1 wrk thread, {args.duration} s per workload, 1,000 objects.",
        "",
        "| workload | requests/s | p50 ms | p99 ms | non-2xx | server CPU % | server RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['name'].upper()} `{r['path']}` | {r['rps']:,.0f} | {r['p50']:.2f} | "
                     f"{r['p99']:.2f} | {r['non2xx']} | {r['cpu']:.0f} | {r['rss']:.1f} |")
    by_name = {r["name"]: r for r in rows}
    cost = 1 - by_name["put durable"]["rps"] / by_name["put"]["rps"]
    lines += ["", f"Durability costs PUT **{cost:.0%}** of its in-memory throughput (the budget is 30 %): "
              "`put durable` adds `--data-dir` (SQLite WAL, synchronous=FULL, group commit; "
              "every answer waits until its change is on disk).",
              "", f"The data directory's disk, measured just before (16 KiB write + fdatasync, 3 s): "
              f"p50 {disk['p50']:.2f} ms, p99 {disk['p99']:.2f} ms, max {disk['max']:.1f} ms. A commit waits for "
              "its sync, and every answer in flight waits for its commit, so the disk's slowest syncs show up "
              "as `put durable`'s p99."]
    lines += ["", "W7 (issue 43), in the same runs as the PUTs: transactions of 4 `set`s on 4 random objects "
              "of the 1,000 (`TX4`) and of 1 `set` (`TX1`), operations applied per second against PUTs per second:", "",
              "| mode | TX4 operations/s | ÷ PUTs/s (target ≥ 2x) | per server CPU-second | TX1 transactions/s | "
              "÷ PUTs/s (target ≥ 0.9x) | per server CPU-second |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for suffix, mode in (("", "in memory"), (" durable", "--data-dir")):
        put, tx4, tx1 = (by_name[name + suffix] for name in ("put", "tx4", "tx1"))

        def per_cpu(row, ops=1):
            """Its operations per server CPU-second against the PUT's: a server starved by other load
            (CPU under 100 %) moves requests/s, much less this."""
            return ops * row["rps"] / max(row["cpu"], 1) / (put["rps"] / max(put["cpu"], 1))

        lines.append(f"| {mode} | {4 * tx4['rps']:,.0f} | {4 * tx4['rps'] / put['rps']:.2f}x | "
                     f"{per_cpu(tx4, 4):.2f}x | "
                     f"{tx1['rps']:,.0f} | {tx1['rps'] / put['rps']:.2f}x | {per_cpu(tx1):.2f}x |")
    lines += ["", "Commands:", ""] + [f"- {r['name']}: `{r['cmd']}`" for r in rows] + [""]
    if args.peers_table and Path(args.peers_table).exists():
        # bench/peers.py's summary (medians, ranges, ratios, targets), then the harness's own tables.
        lines += ["## Side by side with nginx+nchan and etcd (../shared/bench)", "",
                  f"`{args.peers_command}` (`--targets obsserver,nchan` in memory, "
                  "`--targets obsserver,nchan,etcd` with `--data-dir {data} --sync full`)", "",
                  Path(args.peers_table).read_text()]
        for mode in ("memory", "durable"):
            detail = Path(args.peers_table).parent / mode / "table.md"
            if detail.exists():
                lines += [f"### All figures, ObsServer {'in memory' if mode == 'memory' else '--data-dir'}", "",
                          detail.read_text().replace("\n### ", "\n#### ")]
    for extra in args.extra:
        if Path(extra).exists():
            lines += [Path(extra).read_text()]
    # Every section this run did not write stays (the instruction counts of `make callgrind`, the
    # soak's, the profiles and measurements made by hand) until a run replaces it.
    previous = Path(args.out).read_text() if Path(args.out).exists() else ""
    written = {line for item in lines for line in item.splitlines() if line.startswith("## ")}
    for kept in re.finditer(r"^## .*?(?=\n## |\Z)", previous, re.S | re.M):
        title = kept.group(0).splitlines()[0]
        if title not in written:
            lines += ["", kept.group(0).rstrip(), ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")
    if any(r["non2xx"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
