#!/usr/bin/env python3
"""Sweep over-provisioning x GC policy on the spec-02 device and plot WAF vs OP.

    python examples/op_sweep.py                    # 10x fewer writes than the preset, local cores
    python examples/op_sweep.py --scale 1000       # a quick look (seconds)
    python examples/op_sweep.py --backend ray --ray-address auto   # on a running Ray cluster

Every point must reach GC steady state, or its WAF says nothing (a device that never fills
its spare space never collects: WAF 1.0). So --scale shrinks the device with the writes and
keeps at least MIN_WRITES_PER_UNIT overwrites per physical unit: below 880 blocks' worth
the device has fewer blocks (never fewer than MIN_BLOCKS; there the writes stop shrinking).

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
PRESET_BLOCKS = 880  # its device.geometry.blocks_per_plane (one plane)
PAGES_PER_BLOCK = 128  # its pages_per_block (1 KiB pages = 1 KiB mapping units)
# Overwrites per physical unit every point gets: at the largest OP (50 %) a third of the
# device is free after the fill, so GC starts within the first 0.4 units' worth of writes
# and the rest are written at steady state (the preset writes about 89).
MIN_WRITES_PER_UNIT = 8
# The smallest device, half the preset: GC keeps 3 blocks in reserve, which a smaller device
# takes out of its spare space (with 110 blocks greedy's WAF at OP 5 % is 17, against 10 on
# the full device; with 440 it is 11).
MIN_BLOCKS = 440


def scaled_device(scale: float) -> tuple:
    """(blocks_per_plane, requests) for --scale: the preset's writes / scale on a device
    small enough to take MIN_WRITES_PER_UNIT overwrites per physical unit (not below
    MIN_BLOCKS: there the writes are MIN_WRITES_PER_UNIT per unit, not fewer)."""
    requests = max(1, int(PRESET_REQUESTS / scale))
    per_block = MIN_WRITES_PER_UNIT * PAGES_PER_BLOCK
    blocks = max(MIN_BLOCKS, min(PRESET_BLOCKS, requests // per_block))
    return blocks, max(requests, blocks * per_block)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=10,
                    help="divide the preset's 10M overwrites by this (the device shrinks with them, see above)")
    ap.add_argument("--out", default="op_sweep.png", help="PNG to write")
    ap.add_argument("--backend", choices=["local", "ray"], default="local")
    ap.add_argument("--ray-address", default=None, help="ray.init(address=...) for --backend ray")
    a = ap.parse_args()

    if a.backend == "ray":
        import ray

        ray.init(address=a.ray_address)
    blocks, requests = scaled_device(a.scale)
    print("device: {} of {} blocks x {} pages of 1 KiB, {} overwrites per point ({:.1f} per physical unit)".format(
        blocks, PRESET_BLOCKS, PAGES_PER_BLOCK, requests, requests / (blocks * PAGES_PER_BLOCK)))
    df = ssdlab.sweep(
        CONFIG,
        {
            "ftl.gc": [{"policy": p} for p in GC_POLICIES],
            "device.over_provisioning_ratio": OP_RATIOS,
        },
        backend=a.backend,
        overrides={"workload.requests": requests, "device.geometry.blocks_per_plane": blocks},
    )
    df["gc_policy"] = df["ftl.gc"].map(lambda g: g["policy"])
    print(df[["gc_policy", "device.over_provisioning_ratio", "status", "waf", "gc_victims", "error"]].to_string(index=False))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for policy, g in df[df["status"] != "failed"].groupby("gc_policy", sort=False):
        ax.plot(g["device.over_provisioning_ratio"] * 100, g["waf"], marker="o", label=policy)
    ax.set_xlabel("over-provisioning (%)")
    ax.set_ylabel("write amplification (WAF)")
    ax.set_title("WAF vs OP, uniform random 1 KiB overwrites\n(configs/op-paper.toml, {} blocks, {:.0f} writes per unit)".format(
        blocks, requests / (blocks * PAGES_PER_BLOCK)))
    ax.grid(True, alpha=0.3)
    ax.legend(title="GC policy")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
