#!/usr/bin/env python3
"""Where a shared-bench workload's time goes in ObsServer: sampled, not counted (issue 46).

callgrind counts instructions; on a write that touches cold state (W3: one of 1,000 objects,
observers and streams per write) the time goes to waiting on memory as much as to instructions,
which a count does not show. This runs one workload of ../shared/bench (server pinned as the
bench pins it), waits for its load phase (the server busy), and samples the server with
`perf record -e cpu-clock --call-graph=fp` for --seconds. It prints the share of samples in the
kernel and in user space, the user-space functions by their own share (self) and with what
they call (children), and what the listed frames spend their time in.

  python3 bench/profile.py --binary .build/release/obs-server --workload w3
  make profile WORKLOAD=w3

Needs linux-perf (`make profile` installs it). cpu-clock works without hardware counters (VMs).
"""
import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED_BENCH = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "bench.py"
# Frames whose callees are broken down (substrings of mangled names; the first match in a stack counts).
BREAKDOWNS = ("StoreC6submit", "StoreStateV8setValue", "OutboxC13performQueued", "EventLogC4wake")


def server_pid(binary, started, deadline):
    """The pid of the newest process running `binary` that started after `started`."""
    while time.monotonic() < deadline:
        found = []
        for proc in glob.glob("/proc/[0-9]*"):
            try:
                argv = Path(proc, "cmdline").read_bytes().split(b"\0")
                if argv and os.path.realpath(argv[0].decode()) == binary:
                    found.append((os.stat(proc).st_mtime, int(proc.split("/")[-1])))
            except (OSError, UnicodeDecodeError):
                continue
        found = [pid for mtime, pid in sorted(found) if mtime >= started - 1]
        if found:
            return found[-1]
        time.sleep(0.1)
    raise SystemExit(f"no process of {binary} started")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_busy(pid, deadline, threshold=0.5):
    """Returns once the server used more than `threshold` of a core over half a second (the load phase)."""
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - before > threshold * 0.5:
            return
        before = now
    raise SystemExit("the server never got busy: no load phase seen")


def demangled(names):
    """Swift names made readable (`swift demangle --simplified`), others as they are."""
    tool = shutil.which("swift")
    if not tool or not names:
        return {name: name for name in names}
    out = subprocess.run([tool, "demangle", "--simplified", "--compact"], input="\n".join(names),
                         capture_output=True, text=True, timeout=120).stdout.split("\n")
    return {name: (out[i] if i < len(out) and out[i] else name) for i, name in enumerate(names)}


def stacks(data):
    """The sampled stacks, leaf first: [(symbol, is_kernel)]."""
    text = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso"], capture_output=True,
                          text=True, timeout=600).stdout
    result, current = [], []
    for line in text.split("\n"):
        if not line.strip():
            if current:
                result.append(current)
                current = []
            continue
        match = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if not match:
            continue
        symbol, dso = match.groups()
        symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)
        if symbol == "[unknown]":
            if dso.strip("[]") == "unknown":
                continue  # a frame perf could not place (no frame pointer): it names nothing
            symbol = f"[{Path(dso).name}]"
        current.append((symbol, "kernel" in dso))
    if current:
        result.append(current)
    return result


def report(samples, top):
    total = len(samples)
    kernel = sum(1 for stack in samples if stack and stack[0][1])
    own = collections.Counter(stack[0][0] for stack in samples if stack and not stack[0][1])
    children = collections.Counter()
    for stack in samples:
        for symbol in {symbol for symbol, in_kernel in stack if not in_kernel}:
            children[symbol] += 1
    names = demangled(sorted(set(own) | set(children)))
    pct = lambda n: f"{100 * n / total:.1f} %"
    lines = [f"{total} samples: kernel {pct(kernel)}, user space {pct(total - kernel)}.", "",
             "| user-space function (self) | share |", "|---|---:|"]
    lines += [f"| `{names[s][:110]}` | {pct(n)} |" for s, n in own.most_common(top)]
    lines += ["", "| user-space function with what it calls (children) | share |", "|---|---:|"]
    lines += [f"| `{names[s][:110]}` | {pct(n)} |" for s, n in children.most_common(top)]
    for frame in BREAKDOWNS:
        callees, inside = collections.Counter(), 0
        for stack in samples:
            for depth, (symbol, _) in enumerate(stack):
                if frame in symbol:
                    inside += 1
                    callees[stack[depth - 1][0] if depth else "(itself)"] += 1
                    break
        if not inside:
            continue
        label = next((names[s] for s in names if frame in s), frame)
        lines += ["", f"`{label[:100]}`: {pct(inside)} of the samples, in:", ""]
        more = demangled(sorted(callees))
        lines += [f"- {pct(n)} `{more[s][:110]}`" for s, n in callees.most_common(12) if n * 200 >= total]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=".build/release/obs-server")
    ap.add_argument("--workload", default="w3", choices=("w1", "w2", "w3"))
    ap.add_argument("--seconds", type=float, default=5, help="how long to sample (the bench's load lasts 10 s)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--keep", help="keep perf.data in this directory")
    args = ap.parse_args()
    binary = os.path.realpath(args.binary)
    work = Path(tempfile.mkdtemp(prefix="obs-profile-"))
    env = dict(os.environ, BENCH_OBS_CMD=f"{binary} --host 127.0.0.1 --port {{port}} --log-level warning")
    started = time.time()
    bench = subprocess.Popen([sys.executable, str(SHARED_BENCH), "run", "--targets", "obsserver", "--workloads",
                              args.workload, "--runs", "1", "--retries", "0", "--quiet-wait", "5", "--w2-subs",
                              "1000", "--out", str(work / "bench")], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        pid = server_pid(binary, started, deadline)
        wait_busy(pid, deadline)
        data = work / "perf.data"
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "--call-graph=fp", "-p", str(pid),
                        "-o", str(data), "--", "sleep", str(args.seconds)], check=True, timeout=args.seconds + 120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bench.wait(timeout=300)
        result = next(iter(glob.glob(str(work / "bench" / f"obsserver-{args.workload}*.json"))), None)
        rate = json.loads(Path(result).read_text()) if result else {}
        figure = rate.get("rps") or rate.get("delivered_per_s") or rate.get("lat_p99_ms")
        text = (f"## Where {args.workload.upper()}'s time goes ({Path(binary).name}; the run gave {figure}, "
                f"sampled for {args.seconds:g} s of its load)\n\n" + report(stacks(data), args.top) + "\n")
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(data, Path(args.keep) / "perf.data")
    finally:
        if bench.poll() is None:
            bench.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
