#!/usr/bin/env python3
"""Scoped access benchmark (`make bench-scoped`, part of `make bench`; issue 36, API.md section 13).

Every measurement starts a fresh release server with `--token` pinned to CPU 0 (load on CPU 1):

  W1  wrk (1 thread, 64 connections, 10 s) PUT /v1/objects/o<i>/values/name over 1,000 objects
      (bench/put.lua with OBS_BENCH_TOKEN), two ways: with the admin token; with a scoped token of two scopes
      ({"allow": ["read", "write"], "class": "Item", "ids": "o*"} and
       {"allow": ["post", "subscribe"], "names": "chat.*"}). Target: scoped >= 0.95x admin.
  W2  1,000 observers each observing `name` of ONE object (option new), each with an SSE stream;
      200 PUTs at 50/s from 16 connections (bench/obsclient.c, as in bench/queries.py), two ways:
      observers and streams made with the admin token; made with a scoped token (one token for all,
      {"allow": ["read", "observe"], "class": "Item", "ids": "w2-*"}; the writer is the admin).
      Target: scoped p99 within 1.1x admin.
The kinds alternate, --runs times each; noisy runs are redone as in bench/queries.py.
Writes the Markdown section "## Scoped access (issue 36)" to --out, and with --into into that file.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import queries  # noqa: E402  (the server, obsclient, CPU windows and noise rules of bench/queries.py)
from queries import PORT, Server, Window, is_noisy, parse_wrk, run_obsclient, stop, wait_quiet  # noqa: E402

TITLE = "## Scoped access (issue 36)"
ADMIN = "bench-admin-token"
W1_SCOPES = [{"allow": ["read", "write"], "class": "Item", "ids": "o*"},
             {"allow": ["post", "subscribe"], "names": "chat.*"}]
W2_SCOPES = [{"allow": ["read", "observe"], "class": "Item", "ids": "w2-*"}]


def call(c, method, path, body=None, token=ADMIN, ok=(200, 201, 204)):
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    r = c.getresponse()
    data = r.read()
    if r.status not in ok:
        raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data) if data else {}


def setup(c):
    call(c, "PUT", "/v1/classes/Item", {"properties": {"name": {"type": "any"}}})


def run_w1(args, kind):
    with Server(args.binary, args.server_cpus, ["--token", ADMIN]) as server:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        setup(c)
        for i in range(1000):
            call(c, "POST", "/v1/objects", {"id": f"o{i}", "class": "Item", "values": {"name": None}})
        token = ADMIN if kind == "admin" else call(c, "POST", "/v1/tokens", {"scopes": W1_SCOPES})["token"]
        c.close()
        quiet = wait_quiet()
        cmd = ["taskset", "-c", args.client_cpus, "wrk", "-t1", f"-c{args.connections}", f"-d{args.duration}s",
               "--latency", "-s", str(HERE / "put.lua"), f"http://127.0.0.1:{PORT}/"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "OBS_BENCH_TOKEN": token})
        queries.CHILDREN.append(p)
        window = Window(server.pid, p.pid).start()
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        queries.CHILDREN.remove(p)
        cpu = window.stop(client_cpu_s=ru.ru_utime + ru.ru_stime)
        r = parse_wrk(out)
        r.update(cpu, kind=kind, quiet_before_pct=quiet,
                 cmd=" ".join(a.replace(str(HERE.parent) + "/", "") for a in cmd[3:]))
        return r


def run_w2(args, kind, workdir):
    with Server(args.binary, args.server_cpus, ["--token", ADMIN]) as server:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        setup(c)
        call(c, "POST", "/v1/objects", {"id": "w2-o0", "class": "Item", "values": {"name": None}})
        token = ADMIN if kind == "admin" else call(c, "POST", "/v1/tokens", {"scopes": W2_SCOPES})["token"]
        ids = []
        for s in range(args.subs):
            oid = call(c, "POST", "/v1/observers", {"name": f"w2-{s}", "lease": 3600}, token=token)["id"]
            call(c, "POST", f"/v1/observers/{oid}/observations",
                 {"object": "w2-o0", "keyPath": "name", "options": ["new"]}, token=token)
            ids.append(oid)
        c.close()
        subvars = workdir / f"scoped-w2-{kind}.txt"
        subvars.write_text("\n".join(ids) + "\n")
        quiet = wait_quiet()
        cmd = queries.obsclient_cmd(args, subvars, "w2-o{I}", "PUT", "/v1/objects/{KEY}/values/name",
                                    '{"value":{VALUE}}', '"new"', 0)
        # Streams present the token that made the observers; the writer is the admin.
        at = cmd.index("--sub-vars")
        cmd[at:at] = ["--sub-header", f"Authorization: Bearer {token}"]
        at = cmd.index("--write-body")
        cmd[at:at] = ["--write-header", f"Authorization: Bearer {ADMIN}"]
        r = run_obsclient(server, cmd)
        r.update(kind=kind, quiet_before_pct=quiet)
        r["cmd"] = [a if not a.startswith("Authorization") else "Authorization: Bearer …" for a in r["cmd"]]
        return r


def median(rows, key):
    return statistics.median(r[key] for r in rows) if rows else float("nan")


def report(args, w1, w2, noisy):
    def clean(rows, kind):
        return [r for r in rows if r["kind"] == kind and not is_noisy(args, r)]
    w1a, w1s = clean(w1, "admin"), clean(w1, "scoped")
    w2a, w2s = clean(w2, "admin"), clean(w2, "scoped")
    rps_ratio = median(w1s, "rps") / median(w1a, "rps") if w1a and w1s else float("nan")
    p99_ratio = median(w2s, "lat_p99_ms") / median(w2a, "lat_p99_ms") if w2a and w2s else float("nan")
    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}"
    lines = [TITLE, "",
             f"`make bench-scoped` (bench/scoped.py) on {datetime.date.today().isoformat()} — {machine}. "
             f"Server `--token` pinned to CPU {args.server_cpus}, load on CPU {args.client_cpus}; "
             f"{args.runs} alternating runs of each; medians of the runs no other process disturbed.", "",
             f"- **W1, scoped / admin: {rps_ratio:.2f}x** requests/s (target >= 0.95x).",
             f"- **W2, scoped / admin: {p99_ratio:.2f}x** p99 (target <= 1.1x).", "",
             "| workload | credential | runs | req/s (median) | p50 ms | p99 ms | server CPU % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for kind, rows in (("admin", w1a), ("scoped", w1s)):
        if rows:
            lines.append(f"| W1 PUT | {kind} | {len(rows)} | {median(rows, 'rps'):,.0f} | {median(rows, 'p50'):.2f} | "
                         f"{median(rows, 'p99'):.2f} | {median(rows, 'server_cpu_pct'):.0f} |")
    for kind, rows in (("admin", w2a), ("scoped", w2s)):
        if rows:
            delivered = sum(r["deliveries"] for r in rows)
            expected = sum(r["expected_deliveries"] for r in rows)
            lines.append(f"| W2 1,000 SSE | {kind} | {len(rows)} | {delivered:,}/{expected:,} delivered | "
                         f"{median(rows, 'lat_p50_ms'):.2f} | {median(rows, 'lat_p99_ms'):.2f} | "
                         f"{median(rows, 'server_cpu_pct'):.0f} |")
    lines += ["", "Every run: " + ", ".join(
        f"{r['kind']} W1 {r['rps']:,.0f}" for r in w1) + "; " + ", ".join(
        f"{r['kind']} W2 p99 {r['lat_p99_ms']:.2f}" for r in w2) + ".",
        f"Runs redone for noise: {len(noisy)}.", ""]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--client", default="build/obsclient")
    ap.add_argument("--out", default="build/bench-scoped.md")
    ap.add_argument("--into")
    ap.add_argument("--parts", default="w1,w2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--subs", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--max-foreign", type=float, default=20)
    ap.add_argument("--max-foreign-peak", type=float, default=60)
    ap.add_argument("--retries", type=int, default=3)
    args = ap.parse_args()
    args.binary, args.client = str(Path(args.binary).resolve()), str(Path(args.client).resolve())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    workdir = Path("build")
    workdir.mkdir(exist_ok=True)
    w1, w2, noisy = [], [], []

    measure = queries.measurer(args, noisy)
    try:
        for run in range(args.runs):
            for kind in ("admin", "scoped"):
                if "w1" in args.parts:
                    r = measure(f"W1 {kind}", lambda: run_w1(args, kind))
                    w1.append(r)
                    print(f"W1 {kind} run {run + 1}: {r['rps']:,.0f} req/s, p99 {r['p99']} ms, "
                          f"non-2xx {r['non2xx']}, server CPU {r['server_cpu_pct']}%", flush=True)
                if "w2" in args.parts:
                    r = measure(f"W2 {kind}", lambda: run_w2(args, kind, workdir))
                    w2.append(r)
                    print(f"W2 {kind} run {run + 1}: {r['deliveries']}/{r['expected_deliveries']}, "
                          f"p99 {r['lat_p99_ms']:.2f} ms, server CPU {r.get('server_cpu_pct')}%", flush=True)
    finally:
        for p in list(queries.CHILDREN):
            stop(p)
    section = report(args, w1, w2, noisy)
    Path(args.out).write_text(section)
    if args.into:
        queries.put_section(Path(args.into), section, title=TITLE)
    print(section)


if __name__ == "__main__":
    main()
