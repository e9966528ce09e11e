"""Parameter sweeps: every point of a grid a full run, on local cores or a Ray cluster."""

from __future__ import annotations

import itertools
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native, _override_list, _pd, _source, _toml_value

#: Columns of every row after the swept keys (the headline of ``ssdlab sweep``'s sweep.csv).
HEADLINE = _native.SWEEP_HEADLINE.split(",")

Point = Tuple[str, str, Optional[str], List[str]]


def _run_point(point: Point, allow_large_memory: bool = False) -> Tuple[bool, str]:
    """One point, on this process (a Ray worker runs this)."""
    return _native.run_points([point], 1, allow_large_memory)[0]


def _parse(field: str) -> Any:
    if field == "":
        return None
    try:
        return int(field)
    except ValueError:
        pass
    try:
        return float(field)
    except ValueError:
        return field


def _row(i: int, keys: Sequence[str], values: Sequence[Any], ok: bool, payload: str) -> Dict[str, Any]:
    row: Dict[str, Any] = {"point": i}
    row.update(zip(keys, values))
    if ok:
        row.update(zip(HEADLINE, (_parse(f) for f in payload.split(","))))
        row["error"] = None
    else:
        row.update((c, None) for c in HEADLINE)
        row["status"] = "failed"
        row["error"] = payload
    return row


def _local(points: List[Point], jobs: Optional[int], big: bool) -> List[Tuple[bool, str]]:
    return _native.run_points(points, jobs or 0, big)


def _ray(points: List[Point], remote_options: Optional[Mapping[str, Any]], big: bool) -> List[Tuple[bool, str]]:
    import ray

    if not ray.is_initialized():
        raise RuntimeError(
            "backend='ray' submits to the Ray cluster this process is connected to: call "
            "ray.init(address='auto' or 'ray://HEAD:10001') first (ray.init() starts a local one)"
        )
    options = {"num_cpus": 1, **dict(remote_options or {})}
    task = ray.remote(_run_point).options(**options)
    refs = [task.remote(p, big) for p in points]
    out: List[Tuple[bool, str]] = []
    for ref in refs:
        try:
            out.append(ray.get(ref))
        except Exception as e:  # a lost worker or node: the point is reported, not dropped
            out.append((False, "ray task failed: {}: {}".format(type(e).__name__, e)))
    return out


def sweep(
    base,
    grid: Mapping[str, Any],
    backend: str = "local",
    *,
    overrides=None,
    jobs: Optional[int] = None,
    ray_remote_options: Optional[Mapping[str, Any]] = None,
    allow_large_memory: bool = False,
):
    """Run the cartesian product of ``grid`` over the configuration ``base``.

    Args:
        base: a path, TOML text or dict (as for :func:`ssdlab.run`).
        grid: ``{"device.over_provisioning_ratio": [0.07, 0.25], "ftl.gc": [{"policy": "greedy"}, …]}``;
            keys are dotted configuration keys, values Python values (converted to TOML);
            the last key varies fastest (as ``ssdlab sweep``).
        backend: ``"local"`` (all cores of this machine, or ``jobs`` threads) or ``"ray"``
            (one task per point on the Ray cluster this process connected to with
            ``ray.init``; the configuration text travels with the task, so input files it
            names — traces, fio jobs — must be at the same absolute path on every node).
        overrides: fixed overrides of every point (as for :func:`ssdlab.run`).
        jobs: local threads (default: one per core).
        ray_remote_options: extra ``.options()`` of the Ray task (default ``num_cpus=1``).
        allow_large_memory: run points whose device needs more memory than the machine
            running them has available (otherwise such a point fails).

    Returns:
        A DataFrame, one row per point: ``point``, the swept keys, then ``status`` (``completed``,
        ``worn_out``, or ``failed``), ``requests, iops, mb_per_s, user_mb_per_s, waf, host_waf,
        total_waf, read_p50_ns, read_p99_ns, read_p99_99_ns, write_p99_ns, write_p99_99_ns,
        gc_victims, erase_stddev, sim_time_ns`` (``mb_per_s`` and ``waf`` the device's; the
        ``user_``/``host_``/``total_`` columns the user's apart from a host layer's own I/O,
        equal to the device's without one)
        and ``error`` (the message of a failed point, else ``None``).
    """
    text, label, base_dir = _source(base)
    if base_dir is not None:
        base_dir = os.path.abspath(base_dir)  # the same on every Ray worker
    fixed = _override_list(overrides)
    keys = list(grid)
    axes = [v if isinstance(v, (list, tuple, range)) else [v] for v in grid.values()]
    combos = list(itertools.product(*axes))
    points: List[Point] = [
        (text, label, base_dir, fixed + ["{}={}".format(k, _toml_value(v)) for k, v in zip(keys, combo)])
        for combo in combos
    ]
    if backend == "local":
        results = _local(points, jobs, allow_large_memory)
    elif backend == "ray":
        results = _ray(points, ray_remote_options, allow_large_memory)
    else:
        raise ValueError("backend must be 'local' or 'ray', not {!r}".format(backend))
    rows = [_row(i, keys, combo, ok, payload) for i, (combo, (ok, payload)) in enumerate(zip(combos, results))]
    return _pd().DataFrame(rows, columns=["point", *keys, *HEADLINE, "error"])
