"""Run one calibration row: its workload, timing-only, on the row's system (with any hardware
overrides), and what came out."""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ipusim.config import reset_ipu_configuration
from ipusim.config._env import settings_restored
from ipusim.errors import OutOfMemoryWarning
from validation.rows import Row


@dataclass(frozen=True)
class Outcome:
    """What a row's simulation predicts.

    Attributes:
        row: the row.
        predicted: simulated throughput in the row's items per second.
        bound: the resource that bounds the run (``report.bottleneck``).
        shares: every resource's share of the critical IPU's time.
        fraction_of_peak: achieved FLOP/s over the AMP peak, on the busiest IPU.
        memory_used: the fullest IPU's memory over its budget: the larger of its total and its
            busiest tile (at most 1 when the program fits).
        memory_warned: lowering let the program through with an ``OutOfMemoryWarning`` (a
            recomputing stage whose working set is an upper bound) instead of fitting it.
        host: the host preset the run used (``cfg.ipusim.host``: the row's ``host`` argument, else
            the one shipped with its system).
        ipu_bytes: the fullest IPU's bytes (``report.memory.total_bytes``, largest).
        tile_used: the busiest tile's use of the tile budget, largest over the IPUs.
        error: ``predicted / measured - 1``.
    """

    row: Row
    predicted: float
    bound: str
    shares: Mapping[str, float] = field(default_factory=dict)
    fraction_of_peak: float = math.nan
    memory_used: float = math.nan
    memory_warned: bool = False
    host: str = ""
    ipu_bytes: float = math.nan
    tile_used: float = math.nan

    @property
    def error(self) -> float:
        return self.predicted / self.row.measured - 1.0

    @property
    def memory_fits(self) -> bool:
        """The memory check passed as on hardware: within budget, with no warning."""
        return self.memory_used <= 1.0 and not self.memory_warned

    def dominant(self, n: int = 3) -> list[tuple[str, float]]:
        """The ``n`` largest cost terms with their shares."""
        ranked = sorted(self.shares.items(), key=lambda kv: -kv[1])
        return [(name, share) for name, share in ranked[:n] if share > 0]


def _system_file(base: str, overrides: Mapping[str, str], folder: Path) -> str:
    """A system TOML: ``base`` with ``overrides`` (dotted paths, values as in preset files)."""
    lines = [
        'kind = "system"',
        f'name = "{base}"',
        f'description = "{base} with calibration overrides"',
        f'base = "{base}"',
    ]
    for key, value in overrides.items():
        text = f'"{value}"' if isinstance(value, str) else repr(value)
        lines.append(f'"{key}" = {text}')
    path = folder / "system.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@contextlib.contextmanager
def quiet_workload() -> Iterator[list[warnings.WarningMessage]]:
    """Run a workload inside: its report and progress lines swallowed (they are not part of a
    table), its warnings recorded (each OutOfMemoryWarning), and its settings (TF_POPLAR_FLAGS,
    the IPU configuration) not outliving it. Yields the recorded warnings."""
    try:
        with (
            settings_restored(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always", OutOfMemoryWarning)
            yield caught
    finally:
        reset_ipu_configuration()


def run_row(row: Row, reduced: bool = False, overrides: Mapping[str, Any] | None = None) -> Outcome:
    """Simulate ``row`` and return its :class:`Outcome`.

    Args:
        row: an expressible row.
        reduced: use the row's reduced arguments (fewer steps).
        overrides: fitted constants: ``"arg:NAME"`` replaces the workload argument ``--NAME``;
            any other key is a hardware setting replacing the system preset's.
    """
    if not row.expressible:
        raise ValueError(f"row {row.id} cannot be expressed: {row.reason}")
    module = importlib.import_module(f"workloads.{row.workload}")
    overrides = dict(overrides or {})
    args = {k[4:]: v for k, v in overrides.items() if k.startswith("arg:")}
    hardware = {k: v for k, v in overrides.items() if not k.startswith("arg:")}
    argv = row.argv(reduced, args)
    with tempfile.TemporaryDirectory() as tmp:
        if hardware:
            system = str(row.args.get("system") or "IPU")
            path = _system_file(system, hardware, Path(tmp))
            argv = _replace_system(argv, path)
        with quiet_workload() as caught:
            report = module.main(argv)
            host = _host_of(report)
            bottleneck = report.bottleneck
            utilisation = report.utilisation
            memory = report.memory
    busiest = utilisation["fraction_of_peak"].max() if len(utilisation) else math.nan
    used = (
        float(
            np.maximum(
                memory.total_bytes / memory.budget_bytes,
                memory.max_tile_bytes / memory.tile_budget_bytes,
            ).max()
        )
        if len(memory)
        else math.nan
    )
    return Outcome(
        row=row,
        predicted=report.throughput_samples_per_s * row.items_per_sample,
        bound=bottleneck.resource,
        shares=dict(bottleneck.shares),
        fraction_of_peak=float(busiest),
        memory_used=used,
        memory_warned=any(issubclass(w.category, OutOfMemoryWarning) for w in caught),
        host=host,
        ipu_bytes=float(memory.total_bytes.max()) if len(memory) else math.nan,
        tile_used=float(memory.fraction_of_tile_budget.max()) if len(memory) else math.nan,
    )


def _host_of(report: Any) -> str:
    """The host preset of the run just simulated (read before the configuration is reset)."""
    from ipusim.config import active_config, active_system
    from ipusim.hardware.hosts import default_host, load_host

    config = active_config()
    name = config.ipusim.host if config is not None else ""
    return load_host(name or default_host(active_system())).name


def _replace_system(argv: list[str], path: str) -> list[str]:
    out = list(argv)
    if "--system" in out:
        out[out.index("--system") + 1] = path
    else:
        out += ["--system", path]
    return out
