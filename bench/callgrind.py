#!/usr/bin/env python3
"""Instructions per write under callgrind (`make callgrind`; ARCHITECTURE.md, "Profile (callgrind)").

A fresh server per count, under `valgrind --tool=callgrind --instr-atstart=no` with one worker
thread, on a free loopback port (--port 0), in memory and with a data directory (--sync full):

  PUT       100 objects with one observer each (keyPath n, options new), each observer with an
            SSE stream; then 2,000 PUTs {"value": i} round the objects, one connection, one at a time.
  W2 write  one object, 1,000 observers on it, 1,000 streams; then 50 PUTs.
  W3 write  1,000 objects with one observer and stream each; then 2,000 PUTs of the shared bench's values
            ({"name":…,"seq":…}) to the objects in a shuffled order (each twice).
  --cache-sim  counts last-level cache misses too (valgrind's simulated caches, sized as this CPU's), per write:
            what a write that finds its observer's state cold costs beyond its instructions.
  TX        W7 against W1 (issue 43): 1,000 objects and no observer; then 2,000 W1 PUTs (`W1 PUT`), or
            2,000 transactions of one `set` (`TX op (1)`), or 500 of four `set`s on distinct random
            objects (`TX op (4)`), one at a time; the total is divided by the operations (2,000).

Instrumentation is switched on (`callgrind_control -i on`) after the set-up, just after a heartbeat
round, and off once every stream has read every delivery; the total is divided by the PUTs (TX: on
and off around its requests).
Builds nothing: runs a copy of --binary without its debug sections (valgrind 3.19 and DWARF 5).
"""
import argparse
import http.client
import json
import random
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

from sse_socket import SSESocket

WORKLOADS = {"PUT": (100, 1, 2000), "W2 write": (1, 1000, 50), "W3 write": (1000, 1, 2000)}  # objects, observers
# per object, PUTs. W3 as the shared bench's: each of 1,000 objects has its observer and stream, the PUTs go to the
# objects in a shuffled order (each twice) with the bench's values, so a write finds its observer's state cold.
CACHE_EVENTS = ("ILmr", "DLmr", "DLmw")  # last-level misses (--cache-sim): instruction reads, data reads, writes
TX_WORKLOADS = {"W1 PUT": 0, "TX op (1)": 1, "TX op (4)": 4}  # `set`s per transaction (0: a PUT instead)
TX_OPERATIONS = 2000


def call(c, method, path, body=None):
    c.request(method, path, body=None if body is None else json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else {}


class Stream(SSESocket):
    """An observer's SSE stream on a plain socket; counts change records (chunked or not)."""

    def __init__(self, port, observer):
        super().__init__(port, f"GET /v1/observers/{observer}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "Accept: text/event-stream\r\n\r\n".encode())
        self.opened, self.records, self.keepalives = False, 0, 0

    def on_event(self, event):
        self.opened = True  # its first event (`retry:`; older servers a comment)
        self.records += b'"observation":' in event
        self.keepalives += event.startswith(b": keep-alive")


def pump(streams, done, seconds, what):
    """Reads every stream until done(stream) holds for all of them, for at most `seconds`."""
    sel = selectors.DefaultSelector()
    waiting = [s for s in streams if not done(s)]
    for s in waiting:
        sel.register(s.sock, selectors.EVENT_READ, s)
    deadline = time.monotonic() + seconds
    while waiting:
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}: {len(waiting)} of {len(streams)} streams behind")
        for key, _ in sel.select(timeout=1):
            data = key.data.sock.recv(1 << 16)
            if not data:
                raise SystemExit(f"a stream closed while waiting for {what}")
            key.data.feed(data)
            if done(key.data):
                sel.unregister(key.data.sock)
        waiting = [s for s in waiting if not done(s)]
    sel.close()


def control(pid, switch):
    r = subprocess.run(["callgrind_control", "-i", switch, str(pid)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"callgrind_control -i {switch}: {r.stdout}{r.stderr}")


def count(binary, durable, workload, keep, cache_sim=False):
    objects, per_object, puts = WORKLOADS[workload]
    tmp = Path(tempfile.mkdtemp(prefix="obs-callgrind-"))
    out, log = tmp / "callgrind.out", tmp / "server.log"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           *(["--cache-sim=yes"] if cache_sim else []), binary, "--host", "127.0.0.1", "--port", "0", "--threads", "1"]
    if durable:
        cmd += ["--data-dir", str(tmp / "data"), "--sync", "full"]
    with open(log, "wb") as f:
        server = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    streams = []
    try:
        deadline, port = time.monotonic() + 120, None
        while port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", log.read_text(errors="replace"))
            port = m and int(m.group(1))
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start: see {log}")
            time.sleep(0.2)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for o in range(objects):
            call(c, "POST", "/v1/objects", {"id": f"o{o}", "values": {"n": 0}})
            for _ in range(per_object):
                oid = call(c, "POST", "/v1/observers", {"lease": 3600})["id"]
                call(c, "POST", f"/v1/observers/{oid}/observations", {"object": f"o{o}", "keyPath": "n", "options": ["new"]})
                streams.append(Stream(port, oid))
        pump(streams, lambda s: s.opened, 300, "the streams to open")
        c.close()  # idle while the streams opened: a fresh connection for the PUTs, opened before counting
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        call(c, "GET", "/healthz")
        # Every --heartbeat-interval (15 s) the server wakes every stream: start counting just after
        # such a round (the keep-alive on idle streams) so that a short count takes none.
        for s in streams:  # what they hold already, then the next round's keep-alive
            while True:
                try:
                    data = s.sock.recv(1 << 16)
                except BlockingIOError:
                    break
                if not data:
                    raise SystemExit("a stream closed before the count")
                s.feed(data)
            s.keepalives = 0
        pump(streams[:1], lambda s: s.keepalives > 0, 40, "a heartbeat")
        control(server.pid, "on")
        start = time.monotonic()
        order = [i % objects for i in range(puts)]
        if workload.startswith("W3"):
            random.Random(46).shuffle(order)
        for i, o in enumerate(order):
            value = {"name": f"v{i}", "seq": i} if workload.startswith("W3") else i + 1
            call(c, "PUT", f"/v1/objects/o{o}/values/n", {"value": value})
        each = puts // objects
        pump(streams, lambda s: s.records >= each, 600, "the deliveries")
        control(server.pid, "off")
        seconds = time.monotonic() - start
        c.close()
    finally:
        if sys.exc_info()[0]:
            print(f"count failed: its server log and data are in {tmp}", file=sys.stderr)
        for s in streams:
            s.sock.close()
        stop(server)
    if any(s.records != puts // objects for s in streams):
        raise SystemExit("a stream got more deliveries than PUTs")
    return per_write(out, tmp, keep, puts), seconds


def count_tx(binary, durable, workload, keep):
    """Instructions per operation of W1's PUT or of W7's transactions (TX_WORKLOADS), and the seconds counted."""
    per = TX_WORKLOADS[workload]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = Path(tempfile.mkdtemp(prefix="obs-callgrind-tx-data-"))
    server, out, _, tmp = start(binary, port, ["--data-dir", str(data), "--sync", "full"] if durable else [],
                                prefix="obs-callgrind-tx-")
    chance, serial = random.Random(43), 0

    def send(c):
        nonlocal serial
        serial += 1
        value = {"name": f"name-{serial}", "seq": serial}
        if not per:
            return call(c, "PUT", f"/v1/objects/o{serial % 1000}/values/name", {"value": value})
        return call(c, "POST", "/v1/transactions", {"operations": [
            {"op": "set", "object": f"o{o}", "keyPath": "name", "value": value}
            for o in chance.sample(range(1000), per)]})

    try:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for o in range(1000):
                call(c, "POST", "/v1/objects", {"id": f"o{o}", "values": {"name": None}})
            send(c)  # the first of its kind, uncounted
            control(server.pid, "on")
            started = time.monotonic()
            for _ in range(TX_OPERATIONS // max(per, 1)):
                send(c)
            control(server.pid, "off")
            seconds = time.monotonic() - started
        finally:
            stop(server)
        return instructions(out, tmp, keep) / TX_OPERATIONS, seconds
    finally:
        shutil.rmtree(data, ignore_errors=True)


def start(binary, port, extra=(), prefix="obs-callgrind-"):
    """A server under callgrind (instrumentation off) on `port`, once /healthz answers: (server, out, log, tmp)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    out, log = tmp / "callgrind.out", tmp / "server.log"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", binary,
           "--host", "127.0.0.1", "--port", str(port), "--threads", "1", "--log-level", "warning", *extra]
    with open(log, "wb") as f:
        server = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    end = time.monotonic() + 120
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/healthz")
            c.getresponse().read()
            return server, out, log, tmp
        except OSError:
            if server.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"server did not start: see {log}")
            time.sleep(0.5)


def stripped(binary, work):
    """A copy of `binary` without debug sections (valgrind 3.19 cannot read Swift's DWARF 5)."""
    copy = Path(work) / "obs-server"
    subprocess.run(["objcopy", "--strip-debug", binary, str(copy)], check=True, timeout=120)
    return str(copy)


def counted_puts(server, out, tmp, keep, puts, put):
    """`put(i)` for i < `puts` (W1's PUT round 1,000 objects), counted; then the server stopped and
    the instructions per PUT returned."""
    try:
        control(server.pid, "on")
        for i in range(puts):
            put("PUT", f"/v1/objects/o{i % 1000}/values/name", {"value": {"name": f"name-{i}", "seq": i}})
        control(server.pid, "off")
    finally:
        stop(server)
    return instructions(out, tmp, keep) / puts


def per_kind(description, kinds, count):
    """The command line of a per-kind count (`--binary`, `--kinds`, `--keep`): `count(binary, kind,
    keep)` for each kind on a stripped copy of the binary, printed as instructions per PUT."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--kinds", default=kinds)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    work = Path(tempfile.mkdtemp(prefix="obs-callgrind-bin-"))
    binary = stripped(args.binary, work)
    try:
        for kind in args.kinds.split(","):
            print(f"{kind}: {count(binary, kind, args.keep):,.0f} instructions per PUT", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stop(server):
    """SIGTERM (callgrind writes its counts as the server exits), then SIGKILL after 2 minutes."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=120)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=30)


def instructions(out, tmp, keep):
    """The instructions counted while instrumentation was on; `tmp` is kept (and said) or removed."""
    return events(out, tmp, keep)["Ir"]


def events(out, tmp, keep):
    """Every event counted while instrumentation was on (`Ir`; with --cache-sim the misses too), by name."""
    text = out.read_text()
    names = re.search(r"^events: (.+)$", text, re.M)
    totals = re.search(r"^totals: ([\d ]+)$", text, re.M)  # the header's summary: is 0 with --instr-atstart=no
    if not totals or not names:
        raise SystemExit(f"no totals in {out}")
    if keep:
        print(f"  kept {tmp}", flush=True)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return dict(zip(names.group(1).split(), map(int, totals.group(1).split())))


class PerWrite(float):
    """Instructions per write, with the last-level misses per write when the caches were simulated."""
    misses: float | None = None


def per_write(out, tmp, keep, writes):
    counted = events(out, tmp, keep)
    result = PerWrite(counted["Ir"] / writes)
    if all(name in counted for name in CACHE_EVENTS):
        result.misses = sum(counted[name] for name in CACHE_EVENTS) / writes
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--modes", default="memory,durable", help="memory, durable or both")
    ap.add_argument("--workloads", default="PUT,W2,TX", help="some of PUT, W2, W3, TX")
    ap.add_argument("--runs", type=int, default=1, help="counts per cell (the table shows min and max)")
    ap.add_argument("--keep", action="store_true", help="keep each count's callgrind.out, server log and data")
    ap.add_argument("--cache-sim", action="store_true", help="also count last-level cache misses (PUT, W2, W3)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # so that the servers are stopped
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        raise SystemExit("valgrind is not installed (make callgrind installs it)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    # Valgrind 3.19 (Debian 12) gives up on the DWARF 5 that Swift 6 writes: a copy without debug
    # sections runs the same machine code (function names stay, from the symbol table).
    work = Path(tempfile.mkdtemp(prefix="obs-callgrind-bin-"))
    binary = work / "obs-server"
    subprocess.run(["objcopy", "--strip-debug", args.binary, str(binary)], check=True, timeout=120)
    modes = args.modes.split(",")
    names = [w for w in WORKLOADS if w.split()[0] in args.workloads.split(",")]
    names += list(TX_WORKLOADS) if "TX" in args.workloads.split(",") else []
    cells = {}
    try:
        for mode in modes:
            for name in names:
                for run in range(args.runs):
                    if name in TX_WORKLOADS:
                        n, seconds = count_tx(str(binary), mode == "durable", name, args.keep)
                    else:
                        n, seconds = count(str(binary), mode == "durable", name, args.keep, args.cache_sim)
                    cells.setdefault((mode, name), []).append(n)
                    late = "; over 14 s: may hold a heartbeat round, up to 1 % more" if seconds > 14 else ""
                    misses = f", {n.misses:,.1f} last-level misses" if getattr(n, "misses", None) is not None else ""
                    print(f"{mode} {name} run {run + 1}: {n:,.0f} instructions{misses} ({seconds:.1f} s counted{late})",
                          flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nInstructions per write ({args.binary}, {args.runs} run(s); min, and max when they differ):\n")
    print("| mode | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for mode in modes:
        row = []
        for name in names:
            lo, hi = min(cells[(mode, name)]), max(cells[(mode, name)])
            row.append(f"{lo:,.0f}" + (f" – {hi:,.0f} (+{(hi - lo) / lo * 100:.2f} %)" if hi != lo else ""))
        print(f"| {mode} | " + " | ".join(row) + " |")
    if "TX op (4)" in names:
        print("\nA transaction's operation against a W1 PUT (min against min; issue 43):\n")
        for mode in modes:
            put = min(cells[(mode, "W1 PUT")])
            ratios = ", ".join(f"{name} {min(cells[(mode, name)]) / put:.2f}x" for name in ("TX op (1)", "TX op (4)"))
            print(f"- {mode}: {ratios}")


if __name__ == "__main__":
    main()
