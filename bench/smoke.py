#!/usr/bin/env python3
"""The bench's smoke (`make test`): ../shared/bench's W1-W4 against ObsServer alone, a few
seconds each, then bench/run.py's PUT beside W7's transactions (a second each), then the cluster
bench's cost split and failover with 100 subscribers, so that none can rot. It checks what every
run must do (no errors, every due event delivered, no gap or duplicate after a failover) and
asserts no timing: the machine under CI is noisy.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench"


def shared_smoke(binary, out):
    command = f"{binary} --host 127.0.0.1 --port {{port}} --log-level warning"
    subprocess.run(["make", "-C", str(SHARED / "client")], check=True, stdout=subprocess.DEVNULL)
    run = subprocess.run([sys.executable, str(SHARED / "bench.py"), "run", "--targets", "obsserver",
                          "--workloads", "w1,w2,w3,w4", "--runs", "1", "--duration", "2", "--w2-subs", "100",
                          "--w4-subs", "200", "--warmup", "0.3", "--cooldown", "0.2", "--quiet-wait", "3",
                          "--max-foreign", "100", "--retries", "0", "--out", str(out)],
                         env={**os.environ, "BENCH_OBS_CMD": command}, capture_output=True, text=True)
    problems = [] if run.returncode == 0 else [f"../shared/bench failed:\n{run.stdout[-3000:]}{run.stderr[-2000:]}"]
    for workload in ("w1", "w2-s100", "w3", "w4"):
        before = len(problems)
        # A run the bench marks noisy (other load on the machine) is named so; the smoke checks
        # deliveries and errors, never timings, so it counts all the same.
        found = [out / f"obsserver-{workload}-r1.json"] + sorted(out.glob(f"obsserver-{workload}-r1-noisy*.json"))
        path = next((candidate for candidate in found if candidate.exists()), None)
        if path is None:
            problems.append(f"{workload}: no result")
            continue
        result = json.loads(path.read_text())
        if result.get("error") or result.get("errors"):
            problems.append(f"{workload}: {result.get('error') or result.get('errors')} errors")
        for got, due in (("delivered", "expected"), ("check_delivered", "check_expected")):
            if result.get(due) is not None and result.get(got) != result.get(due):
                problems.append(f"{workload}: {result.get(got)} of {result.get(due)} events delivered")
        print(f"bench smoke {workload}: " + ("ok" if len(problems) == before else "; ".join(problems[before:])))
    return problems


def w7_smoke(binary):
    """bench/run.py's PUT and W7 transactions (bench/tx.lua, issue 43), a second each: every answer 2xx."""
    sys.path.insert(0, str(HERE))
    import run  # noqa: E402  (its wrk runs)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = argparse.Namespace(client_cpus=f"0-{os.cpu_count() - 1}", connections=16, duration=1)
    command = [binary, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    rows = run.run_server(args, command, ["put", "tx4", "tx1"], port=port)
    problems = [f"{r['name']}: {r['non2xx']} non-2xx {r['socket_errors']}" for r in rows if r["non2xx"] or not r["rps"]]
    print("bench smoke w7: " + ("ok" if not problems else "; ".join(problems)))
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(HERE.parent / ".build" / "debug" / "obs-server"))
    parser.add_argument("--out", default=str(HERE.parent / "build" / "bench-smoke"))
    args = parser.parse_args()
    out = Path(args.out).resolve()
    args.binary = str(Path(args.binary).resolve())
    problems = []
    if SHARED.exists():
        problems += shared_smoke(args.binary, out / "shared")
    else:
        print("../shared/bench not found: skipping its smoke")
    problems += w7_smoke(args.binary)
    cluster = subprocess.run([sys.executable, str(HERE / "cluster.py"), "--binary", args.binary, "--subs", "100",
                              "--seconds", "2", "--skip-tax", "--out", str(out / "cluster")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if cluster.returncode != 0:
        problems.append(f"cluster bench: {cluster.stderr[-2000:]}")
    else:
        print("bench smoke cluster: ok")
    if problems:
        sys.exit("bench smoke failed:\n" + "\n".join(problems))


if __name__ == "__main__":
    main()
