#!/usr/bin/env python3
"""Queries benchmark (`make bench-queries`, part of `make bench`; issue 35, API.md section 12).

Every measurement starts a fresh release server pinned to CPU 0 (load clients on CPU 1):

  W2  fan-out reference: 1,000 observers each observing `name` of ONE object (option new), each
      with an SSE stream; 200 PUTs at 50/s from 16 keep-alive connections. The shared bench's W2
      (../shared/bench/harness/workloads.py) with its C client obsclient, same flags.
  W5  query fan-out: class Item {group, name, seq, bts}, 1,000 objects in group g1 and 1,000 in g2;
      1,000 observers, each with its own SSE stream and the same query
      {"class": "Item", "where": [["group", "==", "g1"]], "orderBy": [["seq", "desc"]], "limit": 50,
       "select": ["seq", "bts"], "options": ["new"]}.
      g1 object i starts with seq = i - 1,000, so the window holds objects 999…950. The writer
      (obsclient, as W2: 200 writes at 50/s, 16 connections) PATCHes g1 objects 0, 1, 2, … in turn
      (--write-cycle) with {"values": {"name": "v<n>", "seq": <n>, "bts": <send time>}}: n grows
      from 1, so each write brings an object from outside the window in at index 0 and pushes the
      member at index 49 out. Each write is one query record per subscriber, whose insertion carries
      the send time (`bts`, CLOCK_MONOTONIC ns), read after '"inserted"' as W2 reads it after '"new"':
      latency = receipt - send. (A written object already in the window could be reported as
      another member's move, carrying that member's older `bts`: the cycle never writes one.)
      W2 and W5 alternate, --runs times each. Both use bench/obsclient.c, the shared bench's
      client plus --write-cycle.
  W6  W1 (wrk, 1 thread, 64 connections, 10 s, PUT /v1/objects/o<i>/values/name over 1,000 objects:
      bench/put.lua) on objects of class Item {name, shard = i + 1, score = i}, three ways: no query;
      10,000 distinct [["shard", "==", k]] (k = 1…10,000); 10,000 distinct [["score", ">=", k]]
      limit 10. The queries are spread over 100 observers (100 each, no streams: a PUT of `name`
      changes no window). The three alternate, --runs times each.
  Memory  VmRSS (/proc/PID/status, after a 2 s settle) of a server holding 10,000 Item objects, before
      and after registering queries over 100 observers: 10,000 matching nothing (bytes per query);
      10,000 with one member; 10,000 windows of 10 ([k, k + 10) of `score`); 10,000 windows of 1,000
      ([k, k + 1000)); 100 queries matching all 10,000 with limit 10 (bytes per matching member: the
      shape keeps every match, not only the window).

Noise: before each measurement the script waits (at most a minute) for the machine to be nearly
idle, and a W2/W5/W6 run during which other processes used more than --max-foreign % of a core on
average, or more than --max-foreign-peak % over any half second, is redone (at most --retries times,
and none after --retry-minutes;
the redone runs are counted in the section; a run still noisy after them is shown but left out of
the medians).

Writes a Markdown section "## Queries (issue 35)" to --out; with --into, also puts it into that file
in place of the section of the same title (every other section stays).
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import parse_wrk  # noqa: E402  (bench/run.py: the same wrk figures as `make bench`)

PORT = 18492
TITLE = "## Queries (issue 35)"
CHILDREN = []  # every process started, stopped by PID at the end


# ------------------------------------------------------------------ the server
class Server:
    def __init__(self, binary, cpus, extra=()):
        self.cmd = ["taskset", "-c", cpus, binary, "--host", "127.0.0.1", "--port", str(PORT),
                    "--log-level", "warning", *extra]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        CHILDREN.append(self.proc)
        end = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise SystemExit(f"server did not become healthy: {' '.join(self.cmd)}")
            time.sleep(0.1)

    @property
    def pid(self):
        return self.proc.pid  # taskset execs the server: same PID

    def stop(self):
        stop(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def stop(proc, grace=15):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc in CHILDREN:
        CHILDREN.remove(proc)


def call(c, method, path, body=None, ok=(200, 201, 204)):
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status not in ok:
        raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data) if data else {}


def connect():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)


def parallel(jobs, work, threads=4):
    """Runs work(connection, job) for every job on `threads` keep-alive connections."""
    errors, chunks = [], [jobs[i::threads] for i in range(threads)]

    def run(chunk):
        c = connect()
        try:
            for job in chunk:
                work(c, job)
        except BaseException as e:  # SystemExit included: reported by the caller
            errors.append(e)
        finally:
            c.close()
    ts = [threading.Thread(target=run, args=(chunk,), daemon=True) for chunk in chunks]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=900)
    if errors or any(t.is_alive() for t in ts):
        raise SystemExit(f"set-up failed: {errors[:1] or 'timed out'}")


# ------------------------------------------------------------ CPU and memory
def proc_cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def machine_busy():
    """CPU seconds all cores spent busy so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")


class Window:
    """Server CPU, client CPU and everyone else's over a measured window, in % of one core; and
    everyone else's peak over any half second of it (a p99 of 200 writes is the worst two writes:
    one burst of someone else's work is enough to move it)."""

    def __init__(self, server_pid, client_pid=None):
        self.server_pid, self.client_pid = server_pid, client_pid

    def start(self):
        self.t, self.m = time.monotonic(), machine_busy()
        self.s = proc_cpu(self.server_pid)
        self.c = proc_cpu(self.client_pid) if self.client_pid else 0.0
        self.peak, self.sampling = 0.0, True
        self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.sampler.start()
        return self

    def _now(self):
        return (time.monotonic(), machine_busy(), proc_cpu(self.server_pid),
                proc_cpu(self.client_pid) if self.client_pid else 0.0)

    def _sample(self):
        last = self._now()
        while self.sampling:
            time.sleep(0.5)
            now = self._now()
            if not self.sampling or (self.client_pid and now[3] == 0.0):
                return  # the client is gone: its last interval is not known
            others = (now[1] - last[1]) - (now[2] - last[2]) - (now[3] - last[3])
            self.peak = max(self.peak, 100 * others / (now[0] - last[0]))
            last = now

    def stop(self, client_cpu_s=None):
        self.sampling = False
        wall = time.monotonic() - self.t
        server = proc_cpu(self.server_pid) - self.s
        client = client_cpu_s if client_cpu_s is not None else (
            proc_cpu(self.client_pid) - self.c if self.client_pid else 0.0)
        total = machine_busy() - self.m
        return {"server_cpu_pct": round(100 * server / wall, 1), "client_cpu_pct": round(100 * client / wall, 1),
                "foreign_cpu_pct": round(max(0.0, 100 * (total - server - client) / wall), 1),
                "foreign_peak_pct": round(self.peak, 1)}


def wait_quiet(threshold=15.0, max_wait=60.0):
    """Waits (bounded) until the machine is nearly idle; returns the busy % seen last."""
    end = time.monotonic() + max_wait
    while True:
        m = machine_busy()
        time.sleep(1)
        busy = 100 * (machine_busy() - m)
        if busy < threshold or time.monotonic() > end:
            return round(busy, 1)


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


# ------------------------------------------------------------- W2 and W5
def obsclient_cmd(args, subvars, key_pattern, write_method, write_path, write_body, marker_after, write_keys):
    cmd = ["taskset", "-c", args.client_cpus, args.client, "--host", "127.0.0.1", "--port", str(PORT),
           "--subs", str(args.subs), "--sub-keys", "1", "--key-pattern", key_pattern, "--framing", "sse",
           "--ready", "headers", "--marker", "bts", "--marker-after", marker_after,
           "--sub-method", "GET", "--sub-path", "/v1/observers/{V}/events", "--sub-body", "",
           "--sub-header", "Accept: text/event-stream", "--sub-vars", str(subvars),
           "--write-method", write_method, "--write-path", write_path, "--write-body", write_body,
           "--write-header", "Content-Type: application/json",
           "--writers", "16", "--rate", str(args.rate), "--count", str(args.writes), "--settle", "0.5",
           "--drain-max", "30", "--drain-idle", "10", "--connect-timeout", "60"]
    if write_keys > 1:
        cmd += ["--write-keys", str(write_keys), "--write-cycle"]
    return cmd


def run_obsclient(server, cmd, timeout=240):
    """obsclient's final JSON, with the server's CPU over its write phase."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    CHILDREN.append(p)
    killer = threading.Timer(timeout, p.kill)
    killer.daemon = True
    killer.start()
    final, window, cpu, server_cpu0 = None, None, {}, None
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "WRITE_START":
                window = Window(server.pid, p.pid).start()
                server_cpu0 = proc_cpu(server.pid)
            elif line == "WRITE_END" and window:
                cpu = window.stop()
            elif line.startswith("{"):
                final = json.loads(line)
        err = p.stderr.read()
        p.wait(timeout=30)
    finally:
        killer.cancel()
        stop(p)
    if final is None:
        raise SystemExit(f"obsclient failed (rc={p.returncode}): {err[-2000:]}")
    if server_cpu0 is not None:  # the server's CPU seconds from the first write to the last delivery
        final["server_cpu_s_drained"] = round(proc_cpu(server.pid) - server_cpu0, 3)
    final.update(cpu)
    final["client_cpu_pct"] = final.get("client_cpu_write_pct")  # obsclient's own getrusage
    final["cmd"] = cmd
    return final


def observers(c, n, prefix):
    return [call(c, "POST", "/v1/observers", {"name": f"{prefix}-{s}", "lease": 3600})["id"] for s in range(n)]


def run_w2(args, workdir):
    with Server(args.binary, args.server_cpus) as server:
        c = connect()
        call(c, "POST", "/v1/objects", {"id": "w2-o0", "values": {"name": None}})
        ids = observers(c, args.subs, "w2")
        for oid in ids:
            call(c, "POST", f"/v1/observers/{oid}/observations",
                 {"object": "w2-o0", "keyPath": "name", "options": ["new"]})
        c.close()
        subvars = workdir / "queries-w2-subvars.txt"
        subvars.write_text("\n".join(ids) + "\n")
        quiet = wait_quiet()
        r = run_obsclient(server, obsclient_cmd(args, subvars, "w2-o{I}", "PUT", "/v1/objects/{KEY}/values/name",
                                                '{"value":{VALUE}}', '"new"', 0))
        r["quiet_before_pct"] = quiet
        return r


W5_QUERY = {"class": "Item", "where": [["group", "==", "g1"]], "orderBy": [["seq", "desc"]], "limit": 50,
            "select": ["seq", "bts"], "options": ["new"]}


def run_w5(args, workdir):
    if args.writes > args.w5_objects - 50:
        raise SystemExit("W5 writes each object once: --writes must leave the initial window's 50 unwritten")
    with Server(args.binary, args.server_cpus) as server:
        c = connect()
        call(c, "PUT", "/v1/classes/Item", {"properties": {
            "group": {"type": "string"}, "name": {"type": "string"}, "seq": {"type": "number"},
            "bts": {"type": "number"}}})
        for i in range(args.w5_objects):
            for prefix, group in (("w5-o", "g1"), ("w5-x", "g2")):
                call(c, "POST", "/v1/objects", {"id": f"{prefix}{i}", "class": "Item",
                                                "values": {"group": group, "name": "", "seq": i - args.w5_objects,
                                                           "bts": 0}})
        ids = observers(c, args.subs, "w5")
        for oid in ids:
            call(c, "POST", f"/v1/observers/{oid}/queries", W5_QUERY)
        held = call(c, "GET", f"/v1/observers/{ids[0]}/queries")["queries"]
        c.close()
        if len(held) != 1:
            raise SystemExit(f"W5: expected one query per observer, got {held}")
        subvars = workdir / "queries-w5-subvars.txt"
        subvars.write_text("\n".join(ids) + "\n")
        quiet = wait_quiet()
        r = run_obsclient(server, obsclient_cmd(args, subvars, "w5-o{I}", "PATCH", "/v1/objects/{KEY}",
                                                '{"values":{VALUE}}', '"inserted"', args.w5_objects))
        r["quiet_before_pct"] = quiet
        return r


# ------------------------------------------------------------------- W6
def eq_query(k):
    return {"class": "Item", "where": [["shard", "==", k]]}


def range_query(k):
    return {"class": "Item", "where": [["score", ">=", k]], "limit": 10}


def seed_items(c, n, prefix="o"):
    call(c, "PUT", "/v1/classes/Item", {"properties": {
        "name": {"type": "any"}, "shard": {"type": "integer"}, "score": {"type": "number"}}})

    def make(conn, i):
        call(conn, "POST", "/v1/objects", {"id": f"{prefix}{i}", "class": "Item",
                                           "values": {"name": None, "shard": i + 1, "score": i}})
    parallel(list(range(n)), make)


def register(definitions, holders=100):
    """Registers every definition, spread evenly over `holders` fresh observers; returns seconds taken."""
    c = connect()
    ids = observers(c, holders, "q")
    c.close()
    jobs = [(ids[i * holders // len(definitions)] if len(definitions) > holders else ids[i % holders], d)
            for i, d in enumerate(definitions)]
    t0 = time.monotonic()
    parallel(jobs, lambda conn, job: call(conn, "POST", f"/v1/observers/{job[0]}/queries", job[1], ok=(201,)))
    return time.monotonic() - t0


def run_w6(args, kind):
    with Server(args.binary, args.server_cpus) as server:
        c = connect()
        seed_items(c, 1000)
        c.close()
        took = None
        if kind == "equality":
            took = register([eq_query(k) for k in range(1, args.queries + 1)])
        elif kind == "range":
            took = register([range_query(k) for k in range(1, args.queries + 1)])
        quiet = wait_quiet()
        cmd = ["taskset", "-c", args.client_cpus, "wrk", "-t1", f"-c{args.connections}", f"-d{args.duration}s",
               "--latency", "-s", str(HERE / "put.lua"), f"http://127.0.0.1:{PORT}/"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        CHILDREN.append(p)
        window = Window(server.pid, p.pid).start()
        killer = threading.Timer(args.duration + 60, p.kill)
        killer.daemon = True
        killer.start()
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        killer.cancel()
        CHILDREN.remove(p)
        cpu = window.stop(client_cpu_s=ru.ru_utime + ru.ru_stime)
        r = parse_wrk(out)
        r.update(cpu, kind=kind, register_s=took, quiet_before_pct=quiet,
                 rss_mib=vm_rss_kib(server.pid) / 1024,
                 cmd=" ".join(a.replace(str(HERE.parent) + "/", "") for a in cmd[3:]))
        return r


# ---------------------------------------------------------------- memory
MEMORY = [
    # label, definitions, members in windows, matching members
    ("10,000 queries matching nothing", lambda: [eq_query(k) for k in range(10001, 20001)], 0, 0),
    ("10,000 queries, 1 member each", lambda: [eq_query(k) for k in range(1, 10001)], 10000, 10000),
    ("10,000 queries, window of 10 (10 match)",
     lambda: [{"class": "Item", "where": [["score", ">=", k], ["score", "<", k + 10]], "limit": 10}
              for k in range(10000)], sum(min(10, 10000 - k) for k in range(10000)),
     sum(min(10, 10000 - k) for k in range(10000))),
    ("10,000 queries, window of 1,000 (up to 1,000 match)",
     lambda: [{"class": "Item", "where": [["score", ">=", k], ["score", "<", k + 1000]], "limit": 1000}
              for k in range(10000)], sum(min(1000, 10000 - k) for k in range(10000)),
     sum(min(1000, 10000 - k) for k in range(10000))),
    ("100 queries matching all 10,000, limit 10",
     lambda: [{"class": "Item", "where": [["score", ">=", -k]], "limit": 10} for k in range(1, 101)],
     100 * 10, 100 * 10000),
]


def run_memory(args, label, make, window_members, matching):
    definitions = make()
    with Server(args.binary, args.server_cpus) as server:
        c = connect()
        seed_items(c, 10000)
        holders = observers(c, 100, "m")  # the same observers hold the queries: their own cost is not counted
        c.close()
        time.sleep(2)
        before = vm_rss_kib(server.pid)
        jobs = [(holders[i * 100 // len(definitions)], d) for i, d in enumerate(definitions)]
        t0 = time.monotonic()
        parallel(jobs, lambda conn, job: call(conn, "POST", f"/v1/observers/{job[0]}/queries", job[1], ok=(201,)))
        took = time.monotonic() - t0
        time.sleep(2)
        after = vm_rss_kib(server.pid)
    return {"label": label, "queries": len(definitions), "window_members": window_members, "matching": matching,
            "rss_before_mib": before / 1024, "rss_after_mib": after / 1024, "delta_bytes": (after - before) * 1024,
            "register_s": took}


# ---------------------------------------------------------------- report
def median(values):
    return statistics.median(values) if values else float("nan")


def fmt_range(values, digits=2):
    return f"{median(values):,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def is_noisy(args, r):
    return r.get("foreign_cpu_pct", 0) > args.max_foreign or r.get("foreign_peak_pct", 0) > args.max_foreign_peak


def report(args, w2, w5, w6, mem, noisy):
    def clean(rows):
        """The runs within --max-foreign (all of them when none is): the medians' runs."""
        within = [r for r in rows if not is_noisy(args, r)]
        return within or rows
    kept_noisy = [f"{name} run {i + 1}" for name, rows in (("W2", w2), ("W5", w5)) for i, r in enumerate(rows)
                  if r not in clean(rows)]
    kept_noisy += [f"W6 {r['kind']} run {i + 1}" for i, r in enumerate(w6) if r not in clean(
        [x for x in w6 if x["kind"] == r["kind"]])]

    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    machine = f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}"
    lines = [TITLE, "",
             f"`make bench-queries` ({Path(__file__).name}) on {datetime.date.today().isoformat()} at {commit} — "
             f"{machine}. Release build, in memory, a fresh server per measurement pinned to CPU "
             f"{args.server_cpus}, load clients on CPU {args.client_cpus}. Median (min–max) of {args.runs} runs, "
             "the workloads alternating. `foreign` is the CPU everything else on the machine used during the "
             f"measured window (% of one core), and its peak over any 0.5 s; runs above {args.max_foreign:g} % "
             f"(peak {args.max_foreign_peak:g} %) were redone "
             f"({len(noisy)} this time: {', '.join(n['name'] for n in noisy) or 'none'})"
             + (f"; still above it after {args.retries} retries, shown but left out of the medians: "
                f"{', '.join(kept_noisy)}" if kept_noisy else "") + ".", ""]
    if w2 and w5:
        lines += ["### W5, query fan-out, against W2 in the same run", "",
                  f"{args.subs:,} subscribers (observers, one SSE stream each), "
                  f"{args.writes} writes at {args.rate:g}/s from 16 connections. W2: one object, {args.subs:,} "
                  "observations of `name`. W5: the same query on every observer, "
                  f"`{json.dumps({k: v for k, v in W5_QUERY.items()}, separators=(',', ':'))}`, over "
                  f"{args.w5_objects:,} objects in g1 (and {args.w5_objects:,} in g2) whose `seq` puts objects "
                  f"{args.w5_objects - 1}…{args.w5_objects - 50} in the window; the writer PATCHes g1 objects 0, 1, 2, "
                  "… in turn with a growing `seq` and its send time `bts`: each write brings an object in at index 0 "
                  "and pushes index 49 out. Latency per delivery: receipt − the send time carried in the value "
                  "(W2: `new`; W5: the insertion's `new.bts`). Client: bench/obsclient.c (the shared bench's "
                  "obsclient, plus `--write-cycle`).", "",
                  "| workload | delivered / expected | p50 ms | p99 ms | max ms | writer p99 ms | server CPU % | "
                  "client CPU % | foreign % (peak) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, rows in (("W2", w2), ("W5", w5)):
            for i, r in enumerate(rows):
                lines.append(f"| {name} run {i + 1} | {r['deliveries']:,} / {r['expected_deliveries']:,} | "
                             f"{r['lat_p50_ms']:.2f} | {r['lat_p99_ms']:.2f} | {r['lat_max_ms']:.1f} | "
                             f"{r['write_lat_p99_ms']:.2f} | {r.get('server_cpu_pct', float('nan')):.0f} | "
                             f"{r['client_cpu_pct']:.0f} | {r.get('foreign_cpu_pct', float('nan')):.0f} "
                             f"({r.get('foreign_peak_pct', float('nan')):.0f}) |")
        complete = all(r["deliveries"] == r["expected_deliveries"] == args.subs * args.writes for r in w2 + w5)
        pairs2, pairs5 = w2, w5
        w2, w5 = clean(w2), clean(w5)
        p50 = (median([r["lat_p50_ms"] for r in w5]), median([r["lat_p50_ms"] for r in w2]))
        p99 = (median([r["lat_p99_ms"] for r in w5]), median([r["lat_p99_ms"] for r in w2]))
        ratio = p99[0] / p99[1]
        lines += ["", f"W5 p50 {fmt_range([r['lat_p50_ms'] for r in w5])} ms against W2 "
                  f"{fmt_range([r['lat_p50_ms'] for r in w2])} ms ({p50[0] / p50[1]:.2f}×); "
                  f"**W5 p99 {fmt_range([r['lat_p99_ms'] for r in w5])} ms against W2 "
                  f"{fmt_range([r['lat_p99_ms'] for r in w2])} ms: {ratio:.2f}×** (target ≤ 1.2×: "
                  f"{'met' if ratio <= 1.2 else 'not met'}); run by run (W5 after its W2): "
                  + ", ".join(f"{a['lat_p99_ms'] / b['lat_p99_ms']:.2f}×" for a, b in zip(pairs5, pairs2))
                  + f". Every due delivery arrived: "
                  f"{'yes' if complete else '**no**'}.", ""]
    if w6:
        by = {k: clean([r for r in w6 if r["kind"] == k]) for k in ("none", "equality", "range")}
        base = median([r["rps"] for r in by["none"]])
        lines += ["### W6, W1 with 10,000 registered queries", "",
                  f"W1 as in `make bench` (`bench/put.lua`, wrk 1 thread, {args.connections} connections, "
                  f"{args.duration} s, 1,000 objects), the objects of class Item with `shard` = i + 1 and "
                  f"`score` = i; {args.queries:,} distinct queries over 100 observers (no streams).", "",
                  "| queries | requests/s | × none | p50 ms | p99 ms | non-2xx | server CPU % | wrk CPU % | "
                  "foreign % | RSS MiB | register s | target |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        names = {"none": "none", "equality": f"{args.queries:,} × `[[\"shard\",\"==\",k]]`",
                 "range": f"{args.queries:,} × `[[\"score\",\">=\",k]]` limit 10"}
        targets = {"none": (None, ""), "equality": (0.9, "≥ 0.9×"), "range": (0.5, "≥ 0.5×")}
        for kind, rows in by.items():
            if not rows:
                continue
            rps = [r["rps"] for r in rows]
            ratio = median(rps) / base
            bound, text = targets[kind]
            met = "" if bound is None else f"{text}: {'met' if ratio >= bound else '**not met**'}"
            reg = [r["register_s"] for r in rows if r["register_s"]]
            lines.append(f"| {names[kind]} | {fmt_range(rps, 0)} | {ratio:.2f}× | "
                         f"{median([r['p50'] for r in rows]):.2f} | {median([r['p99'] for r in rows]):.2f} | "
                         f"{sum(r['non2xx'] for r in rows)} | {median([r['server_cpu_pct'] for r in rows]):.0f} | "
                         f"{median([r['client_cpu_pct'] for r in rows]):.0f} | "
                         f"{median([r['foreign_cpu_pct'] for r in rows]):.0f} | "
                         f"{median([r['rss_mib'] for r in rows]):.1f} | "
                         f"{f'{median(reg):.1f}' if reg else '—'} | {met} |")
        lines += ["", "Requests/s per run (foreign CPU %, peak): " + "; ".join(
            f"{k} " + ", ".join(f"{r['rps']:,.0f} ({r['foreign_cpu_pct']:.0f}, {r.get('foreign_peak_pct', 0):.0f})"
                                for r in w6 if r["kind"] == k)
            for k in by) + ".", ""]
    if mem:
        per_query = next((m["delta_bytes"] / m["queries"] for m in mem if m["matching"] == 0), None)
        lines += ["### Memory", "",
                  "VmRSS of a server holding 10,000 Item objects and 100 observers, 2 s after the set-up and 2 s "
                  "after registering the queries (over the 100 observers). Per member: the growth less the "
                  "queries' own cost (first row), divided by the members.", "",
                  "| queries | members in windows | matching members | RSS before MiB | after MiB | growth MiB | "
                  "bytes per query | bytes per member | register s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for m in mem:
            pq = m["delta_bytes"] / m["queries"]
            pm = "—"
            if m["matching"] and per_query is not None:
                pm = f"{(m['delta_bytes'] - per_query * m['queries']) / m['matching']:,.0f}"
            lines.append(f"| {m['label']} | {m['window_members']:,} | {m['matching']:,} | "
                         f"{m['rss_before_mib']:.1f} | {m['rss_after_mib']:.1f} | {m['delta_bytes'] / 2**20:.1f} | "
                         f"{pq:,.0f} | {pm} | {m['register_s']:.1f} |")
        lines += [""]
    lines += ["Commands (`{V}`: the observers' ids, one a line):", ""]
    if w2:
        lines.append(f"- W2: `{' '.join(shown(a) for a in w2[0]['cmd'][3:])}`")
    if w5:
        lines.append(f"- W5: `{' '.join(shown(a) for a in w5[0]['cmd'][3:])}`")
    if w6:
        lines.append(f"- W6: `{w6[0]['cmd']}`")
    lines.append("")
    return "\n".join(lines)


def shown(arg):
    arg = arg.replace(str(HERE.parent) + "/", "")
    return arg if re.match(r"^[\w/.:{}=,-]+$", arg) else "'" + arg.replace("'", "'\\''") + "'"


def measurer(args, noisy):
    """measure(name, fn): fn() again while other processes took more than --max-foreign % of a core
    (at most --retries times, and none after --retry-minutes); the noisy runs go to `noisy`."""
    retry_deadline = time.monotonic() + 60 * getattr(args, "retry_minutes", 60)

    def measure(name, fn):
        for attempt in range(args.retries + 1):
            r = fn()
            if not is_noisy(args, r) or attempt == args.retries or time.monotonic() > retry_deadline:
                r["noisy_redone"] = attempt
                return r
            print(f"{name}: foreign CPU {r['foreign_cpu_pct']} % (peak {r.get('foreign_peak_pct')} %) > "
                  f"{args.max_foreign} % ({args.max_foreign_peak} %): redone", flush=True)
            noisy.append({"name": name, **{k: v for k, v in r.items() if k != "cmd"}})
    return measure


def put_section(path, section, title=TITLE):
    """Puts `section` into the Markdown file in place of its previous version (or at the end)."""
    text = Path(path).read_text() if Path(path).exists() else ""
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=\n## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip() + "\n", text, count=1)
    else:
        text = text.rstrip() + "\n\n" + section.rstrip() + "\n"
    Path(path).write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--client", default="build/obsclient", help="bench/obsclient.c, built")
    ap.add_argument("--out", default="build/bench-queries.md")
    ap.add_argument("--into", help="also put the section into this file (BENCHMARKS.md)")
    ap.add_argument("--parts", default="w5,w6,memory")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--subs", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--w5-objects", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--max-foreign", type=float, default=20, help="redo a run when others took more (%% of a core)")
    ap.add_argument("--max-foreign-peak", type=float, default=60, help="... or more over any 0.5 s (%% of a core)")
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--retry-minutes", type=float, default=40, help="no run is redone after this many minutes")
    ap.add_argument("--json", default="build/bench-queries.json", help="every figure, for --report-from")
    ap.add_argument("--report-from", help="measure nothing: write the section from such a JSON file")
    args = ap.parse_args()
    args.binary, args.client = str(Path(args.binary).resolve()), str(Path(args.client).resolve())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # so that the finally below runs
    parts = args.parts.split(",")
    workdir = Path("build")
    workdir.mkdir(exist_ok=True)
    w2, w5, w6, mem, noisy = [], [], [], [], []
    if args.report_from:
        saved = json.loads(Path(args.report_from).read_text())
        w2, w5, w6, mem, noisy = (saved[k] for k in ("w2", "w5", "w6", "memory", "noisy"))
        parts = []

    measure = measurer(args, noisy)
    try:
        if "w5" in parts:
            for run in range(args.runs):
                for name, fn, rows in (("W2", run_w2, w2), ("W5", run_w5, w5)):
                    r = measure(name, lambda: fn(args, workdir))
                    rows.append(r)
                    print(f"{name} run {run + 1}: {r['deliveries']}/{r['expected_deliveries']} delivered, "
                          f"p50 {r['lat_p50_ms']:.2f} ms, p99 {r['lat_p99_ms']:.2f} ms, max {r['lat_max_ms']:.1f} ms, "
                          f"server CPU {r.get('server_cpu_pct')}%, client {r['client_cpu_pct']}%, "
                          f"foreign {r.get('foreign_cpu_pct')}%", flush=True)
        if "w6" in parts:
            for run in range(args.runs):
                for kind in ("none", "equality", "range"):
                    r = measure(f"W6 {kind}", lambda: run_w6(args, kind))
                    w6.append(r)
                    print(f"W6 {kind} run {run + 1}: {r['rps']:,.0f} req/s, p99 {r['p99']} ms, non-2xx {r['non2xx']}, "
                          f"server CPU {r['server_cpu_pct']}%, foreign {r['foreign_cpu_pct']}%"
                          + (f", registered in {r['register_s']:.1f} s" if r["register_s"] else ""), flush=True)
        if "memory" in parts:
            for label, make, window_members, matching in MEMORY:
                m = run_memory(args, label, make, window_members, matching)
                mem.append(m)
                print(f"memory, {label}: {m['rss_before_mib']:.1f} -> {m['rss_after_mib']:.1f} MiB "
                      f"(registered in {m['register_s']:.1f} s)", flush=True)
    finally:
        for p in list(CHILDREN):
            stop(p)
    if args.json:
        Path(args.json).write_text(json.dumps({"w2": w2, "w5": w5, "w6": w6, "memory": mem, "noisy": noisy}, indent=1))
    section = report(args, w2, w5, w6, mem, noisy)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(section)
    print(section)
    if args.into:
        put_section(args.into, section)
        print(f"wrote {args.out} and its section in {args.into}")


if __name__ == "__main__":
    main()
