#!/usr/bin/env python3
"""Sweep over-provisioning x GC policy on the spec-02 device and plot WAF vs OP.

    python examples/op_sweep.py                    # 10x fewer writes than the preset, local cores
    python examples/op_sweep.py --scale 1000       # a quick look (seconds)
    python examples/op_sweep.py --backend ray --ray-address auto   # on a running Ray cluster

Needs the `ssdlab` package (see docs/python.md) and matplotlib. Writes a PNG (--out) and
prints the sweep's table.
"""

import argparse
import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))  # headless unless told otherwise
import matplotlib.pyplot as plt  # noqa: E402

import ssdlab  # noqa: E402

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "op-paper.toml"
OP_RATIOS = [0.05, 0.1, 0.15, 0.2, 0.3, 0.5]
GC_POLICIES = ["greedy", "cost-benefit", "fifo"]
PRESET_REQUESTS = 10_000_000  # configs/op-paper.toml's workload.requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=10, help="divide the preset's 10M overwrites by this")
    ap.add_argument("--out", default="op_sweep.png", help="PNG to write")
    ap.add_argument("--backend", choices=["local", "ray"], default="local")
    ap.add_argument("--ray-address", default=None, help="ray.init(address=...) for --backend ray")
    a = ap.parse_args()

    if a.backend == "ray":
        import ray

        ray.init(address=a.ray_address)
    df = ssdlab.sweep(
        CONFIG,
        {
            "ftl.gc": [{"policy": p} for p in GC_POLICIES],
            "device.over_provisioning_ratio": OP_RATIOS,
        },
        backend=a.backend,
        overrides={"workload.requests": max(1, int(PRESET_REQUESTS / a.scale))},
    )
    df["gc_policy"] = df["ftl.gc"].map(lambda g: g["policy"])
    print(df[["gc_policy", "device.over_provisioning_ratio", "status", "waf", "gc_victims", "error"]].to_string(index=False))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for policy, g in df[df["status"] != "failed"].groupby("gc_policy", sort=False):
        ax.plot(g["device.over_provisioning_ratio"] * 100, g["waf"], marker="o", label=policy)
    ax.set_xlabel("over-provisioning (%)")
    ax.set_ylabel("write amplification (WAF)")
    ax.set_title("WAF vs OP, uniform random 1 KiB overwrites (configs/op-paper.toml)")
    ax.grid(True, alpha=0.3)
    ax.legend(title="GC policy")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
