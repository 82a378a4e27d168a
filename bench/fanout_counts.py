#!/usr/bin/env python3
"""Fan-out counts that do not depend on the machine, ObsServer and nginx+nchan side by side (issue 46).

A fixed W2: S subscribers (1,000) of one key, then W writes (200) of the shared bench's value
(`{"name":"v<i>","seq":<i>,"bts":<ns>}`) from one keep-alive connection, in lockstep: each write
goes once every subscriber has the one before, so every write is fanned out on its own whatever
the machine's speed (what a write costs, not how writes batch under load). The same run under
three tools, each on a fresh server (pinned to --server-cpus; the client to --client-cpus):

  callgrind  `valgrind --tool=callgrind --instr-atstart=no`, switched on for the writes only:
             user-space instructions per delivery and per write.
  strace     `strace -c -f -p PID` (every thread) attached for the writes only: system calls.
  ctx        plain run: the voluntary (blocked, then woken) and involuntary context switches of
             every thread, from /proc/PID/task/*/status; and the CPU time (this one does depend
             on the machine).

ObsServer: `obs-server --port 0 --threads 1` (as pinned to one core in the shared bench), one
object, S observers each with one observation (keyPath name, options new: the shared bench's
set-up) and its SSE stream. nchan: the shared bench's nginx.conf (`targets/nginx_common.py`) with
`master_process off` (one process, the worker, so that every tool sees all of it), on a free port.
ObsServer's heartbeat round (every 15 s, a keep-alive to every stream) is left out of every count:
counting pauses before a round is due and resumes once every stream has it.
Builds nothing; callgrind runs a copy of --binary without its debug sections (valgrind 3.19).
"""
import argparse
import http.client
import json
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import callgrind  # its stop: SIGTERM (callgrind writes its counts), SIGKILL after 2 minutes
from sse_socket import SSESocket

NGINX_CONF = """
load_module /usr/lib/nginx/modules/ngx_nchan_module.so;
worker_processes 1;
worker_rlimit_nofile 65536;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
daemon off;
master_process off;
events {{ worker_connections 30000; multi_accept on; }}
http {{
  access_log off;
  client_body_temp_path {dir}/tmp;
  keepalive_requests 10000000;
  keepalive_timeout 120s;
  nchan_shared_memory_size 512m;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /pub {{
      nchan_publisher;
      nchan_channel_id $arg_id;
      nchan_message_buffer_length 10;
      nchan_message_timeout 5m;
    }}
    location = /sub {{
      nchan_subscriber eventsource;
      nchan_channel_id $arg_id;
      nchan_subscriber_first_message newest;
    }}
  }}
}}
"""
HEARTBEAT = 15.0  # ObsServer's --heartbeat-interval (its maximum)
MARGIN = 4.0  # counting pauses when a heartbeat round is due within this many seconds


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(c, method, path, body=None, ctype="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    c.request(method, path, body=data, headers={"Content-Type": ctype})
    r = c.getresponse()
    answer = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {answer[:200]!r}")
    return json.loads(answer) if answer and r.getheader("Content-Type", "").startswith("application/json") else {}


class Stream(SSESocket):
    """One SSE subscriber on a plain socket: counts deliveries (events with `"seq":`) and keep-alives."""

    def __init__(self, port, request):
        super().__init__(port, request)
        self.ready, self.deliveries, self.keepalives = False, 0, 0

    def on_event(self, event):
        self.ready = True  # the first event: ObsServer's `retry:`, nchan's `: hi`
        self.deliveries += b'"seq":' in event
        self.keepalives += event.startswith(b": keep-alive")


class Streams:
    def __init__(self, streams):
        self.all = streams
        self.sel = selectors.DefaultSelector()
        for s in streams:
            self.sel.register(s.sock, selectors.EVENT_READ, s)

    def pump(self, done, seconds, what):
        """Reads every stream until done(stream) holds for all of them; returns when the first had it."""
        behind = sum(not done(s) for s in self.all)
        first = time.monotonic() if behind < len(self.all) else None
        deadline = time.monotonic() + seconds
        while behind:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}: {behind} of {len(self.all)} streams behind")
            for key, _ in self.sel.select(timeout=1):
                s = key.data
                was = done(s)
                data = s.sock.recv(1 << 16)
                if not data:
                    raise SystemExit(f"a stream closed while waiting for {what}")
                s.feed(data)
                if not was and done(s):
                    behind -= 1
                    first = first or time.monotonic()
        return first

    def close(self):
        self.sel.close()
        for s in self.all:
            s.sock.close()


class ObsServer:
    name = "ObsServer"
    heartbeat = HEARTBEAT

    def __init__(self, binary):
        self.binary = binary

    def command(self, tmp, binary=None):
        return [binary or self.binary, "--host", "127.0.0.1", "--port", "0", "--threads", "1",
                "--heartbeat-interval", str(int(HEARTBEAT))]

    def port(self, log):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", log.read_text(errors="replace"))
        return m and int(m.group(1))

    def setup(self, port, subs):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        call(c, "POST", "/v1/objects", {"id": "o0", "values": {"name": None}})
        requests = []
        for s in range(subs):
            oid = call(c, "POST", "/v1/observers", {"name": f"bench-{s}", "lease": 3600})["id"]
            call(c, "POST", f"/v1/observers/{oid}/observations", {"object": "o0", "keyPath": "name", "options": ["new"]})
            requests.append(f"GET /v1/observers/{oid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Accept: text/event-stream\r\n\r\n".encode())
        c.close()
        return requests

    def write(self, c, value):
        call(c, "PUT", "/v1/objects/o0/values/name", b'{"value":' + value + b"}")


class Nchan:
    name = "nchan"
    heartbeat = None

    def __init__(self):
        self.chosen = free_port()

    def command(self, tmp, binary=None):
        d = tmp / "nginx"
        (d / "tmp").mkdir(parents=True, exist_ok=True)
        (d / "nginx.conf").write_text(NGINX_CONF.format(dir=d, port=self.chosen))
        return ["nginx", "-c", str(d / "nginx.conf"), "-p", str(d)]

    def port(self, log):
        try:
            socket.create_connection(("127.0.0.1", self.chosen), timeout=1).close()
            return self.chosen
        except OSError:
            return None

    def setup(self, port, subs):
        return [b"GET /sub?id=ch0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"] * subs

    def write(self, c, value):
        call(c, "POST", "/pub?id=ch0", value)


class Callgrind:
    name = "callgrind"

    def __init__(self, work):
        self.work = work

    def prefix(self, tmp):
        self.out = tmp / "callgrind.out"
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={self.out}"]

    def begin(self, pid):
        self.control(pid, "on")

    def end(self, pid):
        self.control(pid, "off")

    def control(self, pid, switch):
        r = subprocess.run(["callgrind_control", "-i", switch, str(pid)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"callgrind_control -i {switch}: {r.stdout}{r.stderr}")

    def result(self):
        totals = re.search(r"^totals: (\d+)", self.out.read_text(), re.M)
        if not totals:
            raise SystemExit(f"no totals in {self.out}")
        return {"instructions": int(totals.group(1))}


class Strace:
    name = "strace"

    def prefix(self, tmp):
        self.tmp, self.calls, self.segment = tmp, {}, 0
        return []

    def begin(self, pid):
        self.segment += 1
        self.file = self.tmp / f"strace-{self.segment}.txt"
        self.proc = subprocess.Popen(["strace", "-c", "-f", "-o", str(self.file), "-p", str(pid)],
                                     stderr=subprocess.PIPE, text=True)
        # "Process N attached with M threads" (or "Process N attached" for a single thread).
        line = self.proc.stderr.readline()
        if "attached" not in line:
            raise SystemExit(f"strace did not attach: {line}")

    def end(self, pid):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)
        for line in self.file.read_text().splitlines():
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
            if m and m.group(2) != "total":
                self.calls[m.group(2)] = self.calls.get(m.group(2), 0) + int(m.group(1))

    def result(self):
        return {"syscalls": sum(self.calls.values()), "by_call": self.calls}


class Switches:
    name = "ctx"

    def prefix(self, tmp):
        self.voluntary = self.involuntary = self.cpu = 0
        return []

    @staticmethod
    def read(pid):
        vol = invol = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                text = Path(f"/proc/{pid}/task/{task}/status").read_text()
            except OSError:
                continue
            vol += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
            invol += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text, re.M).group(1))
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return vol, invol, cpu

    def begin(self, pid):
        self.start = self.read(pid)

    def end(self, pid):
        now = self.read(pid)
        self.voluntary += now[0] - self.start[0]
        self.involuntary += now[1] - self.start[1]
        self.cpu += now[2] - self.start[2]

    def result(self):
        return {"voluntary": self.voluntary, "involuntary": self.involuntary, "cpu": self.cpu}


def measure(target, tool, args, work):
    tmp = Path(tempfile.mkdtemp(prefix="obs-fanout-"))
    log = tmp / "server.log"
    binary = str(work / "obs-server") if isinstance(tool, Callgrind) and isinstance(target, ObsServer) else None
    cmd = ["taskset", "-c", args.server_cpus] + tool.prefix(tmp) + target.command(tmp, binary)
    with open(log, "wb") as f:
        server = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    streams = None
    try:
        deadline, port = time.monotonic() + 120, None
        while port is None:
            port = target.port(log)
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{target.name} did not start: see {log}")
            time.sleep(0.2)
        requests = target.setup(port, args.subs)
        streams = Streams([Stream(port, r) for r in requests])
        streams.pump(lambda s: s.ready, 300, "the streams to open")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        seq = 0

        def write_and_wait():
            nonlocal seq
            seq += 1
            value = b'{"name":"v%d","seq":%d,"bts":%d}' % (seq, seq, time.monotonic_ns())
            target.write(c, value)
            streams.pump(lambda s: s.deliveries >= seq, 600, f"delivery of write {seq}")

        for _ in range(args.warmup):
            write_and_wait()
        last_round = None
        if target.heartbeat:  # start just after a heartbeat round
            last_round = streams.pump(lambda s: s.keepalives >= 1, HEARTBEAT + 10, "a heartbeat")
        rounds = 1
        tool.begin(server.pid)
        for _ in range(args.writes):
            if last_round and time.monotonic() > last_round + target.heartbeat - MARGIN:
                tool.end(server.pid)
                rounds += 1
                last_round = streams.pump(lambda s: s.keepalives >= rounds, HEARTBEAT + 10, "a heartbeat")
                tool.begin(server.pid)
            write_and_wait()
        tool.end(server.pid)
        c.close()
    finally:
        if sys.exc_info()[0]:
            print(f"{target.name} under {tool.name} failed: its log is in {tmp}", file=sys.stderr)
        if streams:
            streams.close()
        callgrind.stop(server)
    if isinstance(target, ObsServer) and any(s.keepalives != rounds for s in streams.all):
        raise SystemExit("a heartbeat round fell inside the count")
    result = tool.result()
    if args.keep:
        print(f"  kept {tmp}", file=sys.stderr, flush=True)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def table(results, args):
    names = list(results)
    w, d = args.writes, args.writes * args.subs
    rows = []

    def row(label, f, fmt="{:,.1f}"):
        values = []
        for n in names:
            try:
                values.append(f(results[n]))
            except KeyError:
                values.append(None)
        cells = [fmt.format(v) if v is not None else "" for v in values]
        ratio = ""
        if len(values) == 2 and values[0] is not None and values[1]:
            ratio = f"{values[0] / values[1]:.2f}×"
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")

    row("instructions per delivery", lambda r: r["callgrind"]["instructions"] / d, "{:,.0f}")
    row("instructions per write (its deliveries included)", lambda r: r["callgrind"]["instructions"] / w, "{:,.0f}")
    row("system calls per delivery", lambda r: r["strace"]["syscalls"] / d, "{:.3f}")
    row("system calls per write", lambda r: r["strace"]["syscalls"] / w, "{:,.1f}")
    calls = sorted({k for r in results.values() for k in r.get("strace", {}).get("by_call", {})},
                   key=lambda k: -max(r.get("strace", {}).get("by_call", {}).get(k, 0) for r in results.values()))
    for k in calls[:args.top]:
        row(f"&nbsp;&nbsp;`{k}` per write", lambda r, k=k: r["strace"]["by_call"].get(k, 0) / w, "{:,.1f}")
    row("voluntary context switches (wake-ups) per write", lambda r: r["ctx"]["voluntary"] / w, "{:,.2f}")
    row("involuntary context switches per write", lambda r: r["ctx"]["involuntary"] / w, "{:,.2f}")
    row("CPU µs per delivery (plain run; depends on the machine)", lambda r: r["ctx"]["cpu"] * 1e6 / d, "{:.2f}")
    head = "| per fixed W2 (" + f"{args.subs:,} subscribers × {args.writes} writes, lockstep) | " + " | ".join(names)
    return "\n".join([head + " | ratio |", "|---|" + "---:|" * (len(names) + 1)] + rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--targets", default="obsserver,nchan")
    ap.add_argument("--tools", default="callgrind,strace,ctx")
    ap.add_argument("--subs", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=3, help="writes before counting (not counted)")
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--top", type=int, default=6, help="system calls listed one by one")
    ap.add_argument("--keep", action="store_true", help="keep each run's directory (callgrind.out, logs)")
    ap.add_argument("--out", help="also write the table here (markdown)")
    ap.add_argument("--json", help="also write every figure here")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    if args.client_cpus:
        os.sched_setaffinity(0, {int(c) for c in args.client_cpus.split(",")})
    tools = args.tools.split(",")
    for need in (["valgrind", "callgrind_control"] if "callgrind" in tools else []) + (
            ["strace"] if "strace" in tools else []) + ["taskset"]:
        if not shutil.which(need):
            raise SystemExit(f"{need} is not installed (`make deps-valgrind` installs valgrind and strace)")
    work = Path(tempfile.mkdtemp(prefix="obs-fanout-bin-"))
    # Valgrind 3.19 gives up on the DWARF 5 Swift writes: a copy without debug sections runs the same code.
    subprocess.run(["objcopy", "--strip-debug", args.binary, str(work / "obs-server")], check=True, timeout=120)
    targets = {"obsserver": lambda: ObsServer(args.binary), "nchan": Nchan}
    results = {}
    try:
        for name in args.targets.split(","):
            target = targets[name]()
            for t in tools:
                tool = {"callgrind": lambda: Callgrind(work), "strace": Strace, "ctx": Switches}[t]()
                started = time.monotonic()
                results.setdefault(target.name, {})[t] = measure(target, tool, args, work)
                print(f"{target.name} {t}: {results[target.name][t]} ({time.monotonic() - started:.0f} s)",
                      file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = table(results, args)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            f"## Fan-out counts (`make bench-fanout`, {time.strftime('%Y-%m-%d')})\n\n"
            f"`python3 bench/fanout_counts.py --binary {args.binary}`: {__doc__.splitlines()[0]}\n\n{text}\n")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
