#!/usr/bin/env python3
"""The Python package's two speed figures (docs/python.md, "Speed"); measurements, not tests.

    python crates/ssdlab-py/bench/speed.py overhead [--cli target/release/ssdlab] [--repeat 9]
    python crates/ssdlab-py/bench/speed.py sweep [--rounds 3]

overhead: a ~1 s run (configs/default.toml, 1.2 M requests) through ssdlab.run vs the CLI,
    alternating, medians: ssdlab.run's wall (time.perf_counter around the call) against the
    CLI's own wall figures (perf.json: preconditioning + workload) and its process wall.
sweep: a 100-point local sweep (~0.2-0.3 s a point) on 1 thread and on all cores.
Each prints how busy the machine was meanwhile (other processes skew the figures).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import ssdlab

ROOT = Path(__file__).resolve().parents[3]
CFG = ROOT / "configs" / "default.toml"
HZ = os.sysconf("SC_CLK_TCK")


def busy_cpu_s() -> float:
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(f) - f[3] - f[4]) / HZ


def overhead(cli: str, repeat: int) -> None:
    sets = {"workload.requests": 1_200_000}
    ssdlab.run(CFG, {"workload.requests": 1000})  # imports pandas
    out = Path(tempfile.mkdtemp())
    cli_wall, cli_sim, py_wall, py_sim = [], [], [], []
    b0, t0 = busy_cpu_s(), time.perf_counter()
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([cli, "run", str(CFG), "--set", "workload.requests=1200000", "--out", str(out), "-q"],
                       check=True, stdout=subprocess.DEVNULL)
        cli_wall.append(time.perf_counter() - t)
        perf = json.loads((out / "perf.json").read_text())
        cli_sim.append(perf["precondition_wall_s"] + perf["workload_wall_s"])
        t = time.perf_counter()
        r = ssdlab.run(CFG, sets)
        py_wall.append(time.perf_counter() - t)
        py_sim.append(r.perf["precondition_wall_s"] + r.perf["workload_wall_s"])
    load = (busy_cpu_s() - b0) / (time.perf_counter() - t0)
    assert r.results_json == (out / "results.json").read_text(), "results.json differs from the CLI's"
    m = statistics.median
    print("machine busy meanwhile: %.2f cores (this benchmark alone: 1.0)" % load)
    for name, xs in [("CLI process wall", cli_wall), ("CLI perf.json (precondition + workload)", cli_sim),
                     ("ssdlab.run wall", py_wall), ("ssdlab.run's own simulation wall", py_sim)]:
        print("%-40s median %.3f s  %s" % (name, m(xs), " ".join("%.3f" % x for x in xs)))
    print("binding overhead per call (wall - its simulation): %.1f ms" % (1e3 * m([w - s for w, s in zip(py_wall, py_sim)])))
    print("ssdlab.run wall vs CLI perf.json: %+.1f %%; vs CLI process wall: %+.1f %%"
          % (100 * (m(py_wall) / m(cli_sim) - 1), 100 * (m(py_wall) / m(cli_wall) - 1)))


def sweep(rounds: int) -> None:
    grid = {
        "device.over_provisioning_ratio": [0.2, 0.25, 0.3, 0.35, 0.4],
        "ftl.gc": [{"policy": p} for p in ["greedy", "fifo", "cost-benefit", "random"]],
        "workload.requests": [150_000, 175_000, 200_000, 225_000, 250_000],
    }
    cores = os.cpu_count() or 1
    walls = {1: [], cores: []}
    ref = None
    for _ in range(rounds):
        for jobs in walls:
            b0, t0 = busy_cpu_s(), time.perf_counter()
            df = ssdlab.sweep(CFG, grid, jobs=jobs, overrides={"device.geometry.blocks_per_plane": 128})
            wall = time.perf_counter() - t0
            load = (busy_cpu_s() - b0) / wall
            ref = df if ref is None else ref
            assert (df.status == "completed").all() and df.equals(ref)
            walls[jobs].append(wall)
            print("jobs=%d: %d points in %.2f s (%.3f s a point); machine busy %.2f cores" % (jobs, len(df), wall, wall / len(df), load), flush=True)
    m = statistics.median
    print("speed-up on %d cores over 1 (medians): %.2fx" % (cores, m(walls[1]) / m(walls[cores])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--cli", default=str(ROOT / "target" / "release" / "ssdlab"))
    o.add_argument("--repeat", type=int, default=9)
    s = sub.add_parser("sweep")
    s.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    overhead(a.cli, a.repeat) if a.what == "overhead" else sweep(a.rounds)


if __name__ == "__main__":
    main()
