#!/usr/bin/env python3
"""The side-by-side table of issue 15: ObsServer in memory and durable next to nchan and etcd.

Reads the result files of two runs of ../shared/bench (one with ObsServer in memory, one with
`--data-dir`; each with nchan, and etcd where it ran) and writes one Markdown table: for each
workload's figure the median of the runs and their range, the ratio to nchan (and to etcd for
durable W1) and whether the target is met. Nothing is assumed: a figure that is missing is
shown as missing, and a run that lost an event fails the table's last column.

    python3 bench/peers.py --memory DIR --durable DIR --out table.md
"""
import argparse
import json
import re
import statistics
from pathlib import Path


def results(directory: Path | None, target: str, name: str) -> list[dict]:
    if directory is None or not directory.is_dir():
        return []
    # `-r2.json`, not `-r2-noisy1.json` (a run the harness repeated because the machine was busy).
    paths = sorted(directory.glob(f"{target}-{name}-r*.json"))
    return [json.loads(path.read_text()) for path in paths if re.search(r"-r\d+\.json$", path.name)]


def figure(rows: list[dict], key: str) -> list[float]:
    return [row[key] for row in rows if row.get(key) is not None]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def cell(values: list[float], digits: int = 0) -> str:
    if not values:
        return "—"
    text = f"{median(values):,.{digits}f}"
    return text if len(values) == 1 else f"{text} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def ratio(ours: float | None, theirs: float | None) -> str:
    return "—" if ours is None or not theirs else f"{ours / theirs:.2f}×"


def complete(rows: list[dict]) -> bool:
    """Every due event delivered in every run."""
    for row in rows:
        if row["workload"] in ("w2", "w3") and row.get("delivered") != row.get("expected"):
            return False
        if row["workload"] == "w4" and row.get("check_delivered") != row.get("check_expected"):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, help="results of the run with ObsServer in memory")
    parser.add_argument("--durable", type=Path, help="results of the run with ObsServer --data-dir")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    def peer(target: str, name: str, mode: str) -> list[dict]:
        # A peer's runs of the same pass as ObsServer's (issue 15: "with nchan in the same run":
        # the machine's speed drifts between passes); etcd runs in the durable pass only, so
        # where a pass has none of a peer's runs, those of the other pass.
        same = results(args.memory if mode == "memory" else args.durable, target, name)
        return same or results(args.durable if mode == "memory" else args.memory, target, name)

    lines = [
        "| workload | figure | mode | ObsServer median (range) | nchan | etcd | ratio | target | met |",
        "|---|---|---|---:|---:|---:|---:|---|---|",
    ]

    def row(workload: str, label: str, mode: str, name: str, key: str, *, digits: int = 0,
            higher_is_better: bool = True, nchan_target: float | None = None, etcd_target: float | None = None,
            absolute: float | None = None) -> None:
        ours = results(args.memory if mode == "memory" else args.durable, "obsserver", name)
        if not ours:
            return
        mine = figure(ours, key)
        nchan, etcd = figure(peer("nchan", name, mode), key), figure(peer("etcd", name, mode), key)
        value, theirs, reference = median(mine), median(nchan), median(etcd)
        ratios, goals, met = [], [], []
        if nchan_target is not None:
            ratios.append(ratio(value, theirs) + " nchan")
            goals.append(("≥ " if higher_is_better else "≤ ") + f"{nchan_target}× nchan")
            if value is not None and theirs:
                met.append(value >= nchan_target * theirs if higher_is_better else value <= nchan_target * theirs)
        if etcd_target is not None:
            ratios.append(ratio(value, reference) + " etcd")
            goals.append(f"≥ {etcd_target}× etcd")
            if value is not None and reference:
                met.append(value >= etcd_target * reference)
        if absolute is not None:
            goals.append(f"≤ {absolute}")
            if value is not None:
                met.append(value <= absolute)
        verdict = "—" if not met else ("yes" if all(met) else "**no**")
        lines.append(
            f"| {workload} | {label} | {mode} | {cell(mine, digits)} | {cell(nchan, digits)} | {cell(etcd, digits)} "
            f"| {', '.join(ratios) or '—'} | {', '.join(goals) or '—'} | {verdict} |")

    row("W1", "writes/s", "memory", "w1", "rps", nchan_target=0.8)
    row("W1", "writes/s", "durable", "w1", "rps", nchan_target=0.5, etcd_target=5)
    row("W2", "p99 ms, S = 1,000", "memory", "w2-s1000", "lat_p99_ms", digits=1, higher_is_better=False,
        nchan_target=1.5)
    row("W2", "p99 ms, S = 1,000", "durable", "w2-s1000", "lat_p99_ms", digits=1, higher_is_better=False,
        nchan_target=3)
    row("W3", "delivered events/s", "memory", "w3", "delivered_per_s", nchan_target=0.7)
    row("W3", "delivered events/s", "durable", "w3", "delivered_per_s", nchan_target=0.5)
    row("W4", "KB per idle stream", "memory", "w4", "server_kb_per_sub", digits=1, absolute=11)
    row("W4", "connect all 10,000, s", "memory", "w4", "connect_wall_s", digits=3, higher_is_better=False,
        nchan_target=1)
    row("W4", "server CPU % while idle", "memory", "w4", "server_cpu_idle_pct", digits=1)

    ours = results(args.memory, "obsserver", "*") + results(args.durable, "obsserver", "*")
    lines += ["", f"Every due event delivered in every ObsServer run: **{'yes' if complete(ours) else 'no'}** "
                  f"({len(ours)} runs)."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
