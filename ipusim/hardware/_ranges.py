"""Plausible ranges of hardware figures, checked whenever a preset, file or override is applied.

The spec classes reject figures the cost model cannot use (zero, negative, not a number); these
ranges reject figures no IPU system has or could have, before anything is sized from them: a
file with a billion tiles would otherwise allocate per-tile tables of gigabytes, and a 1 Hz
clock or a 1 B/s link makes every run last beyond what simulated time can hold. Each range is
wide (one to several orders of magnitude around the presets) and says where it comes from.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, TypeVar

from ipusim.errors import HardwareSpecError
from ipusim.hardware._base import SpecBase

__all__ = ["RANGES", "check_ranges"]


_Spec = TypeVar("_Spec", bound=SpecBase)


class Range(NamedTuple):
    low: float
    high: float
    source: str


_GiB = 2**30

#: Range by kind of figure (see :func:`~ipusim.hardware._base.spec_field`), used unless a field
#: has its own below.
_BY_KIND = {
    # E: 1 MHz .. 100 GHz; presets 1.325-1.85 GHz (chip-*.toml). Below 1 MHz a step of a small
    # model lasts hours of simulated time.
    "hz": Range(1e6, 1e11, "E: 1 MHz-100 GHz around the presets' 1.325-1.85 GHz"),
    # E: 1 kB/s .. 1 PB/s; presets 2-32 GB/s (system-*.toml).
    "bandwidth": Range(1e3, 1e15, "E: 1 kB/s-1 PB/s around the presets' 2-32 GB/s"),
    # E: up to one hour; presets' latencies and overheads are 15 ns-2.8 ms (system-*.toml).
    "time": Range(0.0, 3600.0, "E: 0-1 h around the presets' 15 ns-2.8 ms"),
    "count": Range(0, 1_000_000, "E: counts of links, cores, cycles up to a million"),
    "size": Range(0, 2**50, "E: up to 1 PiB"),
    "number": Range(0.0, 1e6, "E: rates per cycle and scale factors up to a million"),
    "table": Range(0.0, 1e6, "E: FLOPs per cycle per tile up to a million (presets 4-128)"),
}

#: Ranges of individual fields (by field name), narrower than their kind's.
RANGES = {
    # E: 64x GC200's 1472 tiles (https://docs.graphcore.ai/projects/ipu-programmers-guide);
    # the tile map and per-tile memory tables are sized by it.
    "tiles": Range(1, 94_208, "E: up to 64x GC200's 1472 tiles"),
    # S: 6 hardware threads per tile (IPU Programmer's Guide, "Tile architecture"); E: up to 64.
    "threads_per_tile": Range(1, 64, "E: up to 64 (GC200 has 6)"),
    # E: 1 KiB .. 1 GiB per tile; presets 256-624 KiB.
    "sram_bytes_per_tile": Range(1024, _GiB, "E: 1 KiB-1 GiB per tile (presets 256-624 KiB)"),
    # E: 1 MiB .. 64 TiB of Streaming Memory per IPU; presets 32-64 GB.
    "capacity_bytes_per_ipu": Range(2**20, 2**46, "E: 1 MiB-64 TiB (presets 32-64 GB)"),
    # E: IPUs of a system up to 64x the largest IPU-POD (IPU-POD1024,
    # https://www.graphcore.ai/products/ipu-pod); every IPU gets its own tables.
    "num_ipus": Range(1, 65_536, "E: up to 64x IPU-POD1024"),
    "max_ipus": Range(1, 65_536, "E: up to 64x IPU-POD1024"),
    "ipus_per_pod": Range(1, 65_536, "E: up to 64x IPU-POD1024"),
    "ipus_per_chassis": Range(1, 1024, "E: presets have 2-4 IPUs per chassis"),
    "shared_by_ipus": Range(1, 65_536, "E: up to 64x IPU-POD1024"),
    # S: link efficiency is a fraction of the raw bandwidth (system-*.toml: 0.85).
    "efficiency": Range(0.0, 1.0, "S: a fraction of the link's raw bandwidth"),
    "exchange_bytes_per_cycle_per_tile": Range(0.0, 1024.0, "E: up to 1 KiB (presets 4 B)"),
}


_UNITS = {"hz": " Hz", "bandwidth": " B/s", "time": " s", "size": " B"}


def _label(value: float, kind: str) -> str:
    return f"{value:g}{_UNITS.get(kind, '')}"


def _figures(spec: SpecBase, prefix: str = "") -> list[tuple[str, str, str, float]]:
    """(dotted path, field name, kind, value) of every numeric figure of ``spec``."""
    out: list[tuple[str, str, str, float]] = []
    for f in dataclasses.fields(spec):
        kind = f.metadata.get("kind")
        value: Any = getattr(spec, f.name)
        if isinstance(value, SpecBase):
            out.extend(_figures(value, f"{prefix}{f.name}."))
        elif kind == "table":
            out.extend((f"{prefix}{f.name}.{p}", f.name, kind, r) for p, r in value.items())
        elif kind in _BY_KIND:
            out.append((f"{prefix}{f.name}", f.name, kind, value))
    return out


def check_ranges(spec: _Spec, origin: str) -> _Spec:
    """``spec``, once every figure is in its range (else :class:`HardwareSpecError` naming the
    first figure outside it).

    Args:
        spec: a validated chip or system spec.
        origin: where its figures come from (a file path, ``"overrides"``), for the message.
    """
    for path, name, kind, value in _figures(spec):
        low, high, source = RANGES.get(name) or _BY_KIND[kind]
        if not low <= value <= high:
            raise HardwareSpecError(
                f"{origin}: {path} = {_label(value, kind)} is outside the plausible range "
                f"[{_label(low, kind)}, {_label(high, kind)}] ({source}); fix the figure in "
                "the file or override (check its unit)"
            )
    return spec
