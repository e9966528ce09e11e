"""ssdlab: a fast, deterministic NAND-flash SSD simulator, from Python.

* :func:`run` — one simulation (precondition + workload), as ``ssdlab run`` does it; returns
  a :class:`Result` whose ``results.json`` is byte-identical to the CLI's for the same
  configuration and seed.
* :func:`sweep` — the cartesian product of a grid of configuration keys, one row per point,
  on all local cores (``backend="local"``) or as one task per point on a Ray cluster
  (``backend="ray"``).
* :func:`reproduce` — a paper experiment's table (``"op"``, ``"ssr"``, ``"wl"``, ``"dftl"``,
  ``"slc"``, ``"mq"``, ``"zns"``, ``"fdp"``, ``"retry"``) as a DataFrame.

Simulations run in Rust with the GIL released. Errors raise :class:`SsdlabError` (a
``ValueError``) whose message names the file, line and key at fault.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import SsdlabError

__all__ = ["Result", "SsdlabError", "ConfigError", "run", "sweep", "reproduce", "__version__"]
__version__ = _native.__version__

#: Alias of :class:`SsdlabError`: configuration errors are raised as this class.
ConfigError = SsdlabError

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Overrides = Union[None, Mapping[str, Any], Sequence[str]]

LATENCY_COLUMNS = ["op", "percentile", "latency_ns", "samples"]


def _pd():
    import pandas as pd

    return pd


class Result:
    """One run's results.

    Attributes:
        summary: the ``results.json`` content as a dict.
        latency: DataFrame ``op, percentile, latency_ns, samples`` (empty in the functional mode).
        timeseries: DataFrame of ``timeseries.csv`` (empty in the functional mode).
        config: the resolved configuration (every default filled in) as a dict.
        config_toml: ``config.resolved.toml`` (the resolved configuration plus derived values).
        results_json: ``results.json`` as text, byte for byte as the CLI writes it.
        latency_csv, timeseries_csv: the CSV files' text (``None`` where the CLI writes none).
        perf: wall-clock seconds of the preconditioning and the workload (not deterministic).
    """

    def __init__(self, raw: Mapping[str, Any]):
        pd = _pd()
        self.results_json: str = raw["results_json"]
        self.latency_csv: Optional[str] = raw["latency_csv"]
        self.timeseries_csv: Optional[str] = raw["timeseries_csv"]
        self.config_toml: str = raw["config_toml"]
        self.summary: Dict[str, Any] = json.loads(self.results_json)
        self.config: Dict[str, Any] = json.loads(raw["config_json"])
        self.latency = (
            pd.read_csv(io.StringIO(self.latency_csv))
            if self.latency_csv
            else pd.DataFrame(columns=LATENCY_COLUMNS)
        )
        self.timeseries = (
            pd.read_csv(io.StringIO(self.timeseries_csv)) if self.timeseries_csv else pd.DataFrame()
        )
        self.perf: Dict[str, float] = {
            "precondition_wall_s": raw["precondition_wall_s"],
            "workload_wall_s": raw["workload_wall_s"],
        }
        # The results audit's warnings (shares a reader must know), as the CLI prints them.
        for check in self.summary.get("audit", {}).get("checks", []):
            if check.get("verdict") == "warning":
                warnings.warn("ssdlab audit ({}): {}".format(check["name"], check.get("message", "")), stacklevel=3)

    def write(self, out_dir: Union[str, "os.PathLike[str]"]) -> Path:
        """Write results.json, latency.csv, timeseries.csv and config.resolved.toml into
        ``out_dir`` as ``ssdlab run --out`` does (no plots, no perf.json)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        files = {
            "results.json": self.results_json,
            "latency.csv": self.latency_csv,
            "timeseries.csv": self.timeseries_csv,
            "config.resolved.toml": self.config_toml,
        }
        for name, text in files.items():
            if text is not None:
                (out / name).write_bytes(text.encode())
        return out

    def __repr__(self) -> str:
        h = self.summary.get("host", {})
        return "<ssdlab.Result status={} requests={} iops={:.0f} waf={:.3f}>".format(
            self.summary.get("status"), h.get("requests"), h.get("iops", 0.0), self.summary.get("waf", 0.0)
        )


def _toml_value(v: Any) -> str:
    """A Python value as a TOML value (the right-hand side of an override)."""
    return _native.json_to_toml_value(json.dumps(v))


def _override_list(overrides: Overrides) -> List[str]:
    """``{"ftl.gc_soft_free_blocks": 8}`` and/or ``["key=value", …]`` as ``--set`` strings."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return ["{}={}".format(k, _toml_value(v)) for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    out: List[str] = []
    for o in overrides:
        out.extend(_override_list(o) if isinstance(o, Mapping) else [str(o)])
    return out


def _source(config: ConfigLike) -> Tuple[str, str, Optional[str]]:
    """``(toml_text, label, base_dir)`` of a path, a TOML string or a dict.

    A ``str`` is TOML text when it contains a newline or ``=``, else a path. Relative input
    paths (traces, fio jobs) resolve against the file's directory, else the working directory.
    """
    if isinstance(config, Mapping):
        return _native.json_to_toml(json.dumps(config)), "<dict>", None
    if isinstance(config, str) and ("\n" in config or "=" in config):
        return config, "<string>", None
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        text = path.read_text(encoding="utf-8")
        return text, os.fspath(config), os.fspath(path.parent)
    raise TypeError("config must be a path, a TOML string or a dict, not {}".format(type(config).__name__))


def run(
    config: ConfigLike, overrides: Overrides = None, *, seed: Optional[int] = None, allow_large_memory: bool = False
) -> Result:
    """Run one simulation (preconditioning, then the workload) as ``ssdlab run`` does.

    Args:
        config: a path to a TOML file, TOML text, or a dict of the same shape.
        overrides: ``{"ftl.gc_soft_free_blocks": 8}`` (Python values) and/or
            ``["ftl.gc_soft_free_blocks=8", …]`` (TOML values or bare strings), as ``--set``.
        seed: override the configuration's seed (as ``--seed``).
        allow_large_memory: run even when the device needs more memory than the machine has
            available (as ``--allow-large-memory``).

    Raises:
        SsdlabError: invalid configuration (message: ``file:line: key: reason``) or failure.
    """
    text, label, base_dir = _source(config)
    return Result(_native.run(text, label, base_dir, _override_list(overrides), seed, allow_large_memory))


def reproduce(
    name: str,
    scale: float = 1,
    *,
    seed: Optional[int] = None,
    overrides: Overrides = None,
    jobs: Optional[int] = None,
    requests: Optional[int] = None,
):
    """A paper experiment's table (the CSV of ``ssdlab reproduce NAME``) as a DataFrame.

    Args:
        name: ``"op"``, ``"ssr"``, ``"wl"``, ``"dftl"``, ``"slc"``, ``"mq"``, ``"zns"``, ``"fdp"`` or ``"retry"``.
        scale: the ``--scale`` divisor (≥ 1; whole for all but ``op``): larger is quicker.
        seed, overrides: as ``--seed`` and ``--set`` on the experiment's base configuration.
        jobs: worker threads (default: all cores).
        requests: requests per run (``ssr``, ``dftl``; Filebench requests for ``slc``).
    """
    if name not in _native.EXPERIMENTS:
        raise ValueError("unknown experiment {!r}; known: {}".format(name, ", ".join(_native.EXPERIMENTS)))
    csv = _native.reproduce(name, float(scale), seed, _override_list(overrides), jobs or 0, requests)
    return _pd().read_csv(io.StringIO(csv))


from ._sweep import sweep  # noqa: E402  (uses the helpers above)
