"""Host presets: the server (CPU, memory, attachment, framework generation) that drives the IPUs.

A system preset's ``[host]`` table describes the host *link* and the host figures fitted on the
reference host (:data:`REFERENCE_HOST`, the dual EPYC 7742 server of the IPU-POD16 / Bow Pod16
MLPerf submissions): the per-execution round trip, the stream copies' end-to-end bandwidth and
sync, and the input pipeline's speed relative to ipusim's calibration machine. A host preset
(``ipusim/hardware/hosts/*.toml``) says how another server differs, as ratios to the reference:

- ``compute_scale``: time of compute- and memory-bound host work (tf.data copies and casts, image
  decoding, the host side of stream copies) relative to the calibration machine;
- ``call_scale``: time of calls and thread hand-offs relative to the calibration machine;
- ``round_trip_scale``: the per-execution round trip and per-stream-copy sync relative to the
  reference host (1 there by definition);
- ``cores`` for the input pipeline's parallel stages and image-decoding loader workers.

``cfg.ipusim.host`` names the preset; "" picks the one the vendor shipped with the system
(:func:`default_host`). :func:`with_host` applies a preset to a :class:`SystemSpec`.
How the presets were scaled from published figures and this machine's measurements:
``bench/host/README.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ipusim.errors import HardwareSpecError
from ipusim.hardware.specs import SystemSpec
from ipusim.hardware.units import parse_bandwidth

__all__ = [
    "REFERENCE_HOST",
    "HostPreset",
    "default_host",
    "list_hosts",
    "load_host",
    "plausible_hosts",
    "with_host",
]

#: The host the system presets' fitted host figures were measured on (validation/fit.py).
REFERENCE_HOST = "EPYC-7742"

#: Hosts the vendor shipped with a system when it is not the reference (by system preset name).
_SHIPPED_WITH = {"C2": "Xeon-8168"}

_FOLDER = Path(__file__).parent


@dataclass(frozen=True)
class HostPreset:
    """One host server.

    Attributes:
        name / aliases / description: how it is named.
        cpu: the processors (text).
        generation: the SDK / framework generation its published figures come from (text).
        cores: physical cores of the server.
        boost_ghz: the cores' highest clock (GHz).
        memory_bandwidth_bytes_per_s: peak DRAM bandwidth of the server (bytes/s).
        attachment: how it reaches the IPUs (text).
        compute_scale / call_scale: host work's time relative to the calibration machine.
        round_trip_scale: round trip and stream-copy sync relative to the reference host.
        plausible_for: system presets this host may drive (for uncertainty ranges).
        sources: ``{field: "FLAG: source"}``.
    """

    name: str
    aliases: tuple[str, ...]
    description: str
    cpu: str
    generation: str
    cores: int
    boost_ghz: float
    memory_bandwidth_bytes_per_s: float
    attachment: str
    compute_scale: float
    call_scale: float
    round_trip_scale: float
    plausible_for: tuple[str, ...]
    sources: Mapping[str, str]


def _parse(path: Path) -> HostPreset:
    with path.open("rb") as f:
        data = tomllib.load(f)
    try:
        preset = HostPreset(
            name=str(data["name"]),
            aliases=tuple(data.get("aliases", ())),
            description=str(data["description"]),
            cpu=str(data["cpu"]),
            generation=str(data["generation"]),
            cores=int(data["cores"]),
            boost_ghz=float(data["boost_ghz"]),
            memory_bandwidth_bytes_per_s=parse_bandwidth(
                data["memory_bandwidth"], "memory_bandwidth"
            ),
            attachment=str(data["attachment"]),
            compute_scale=float(data["compute_scale"]),
            call_scale=float(data["call_scale"]),
            round_trip_scale=float(data["round_trip_scale"]),
            plausible_for=tuple(data.get("plausible_for", ())),
            sources=dict(data.get("sources", {})),
        )
    except KeyError as e:
        raise HardwareSpecError(f"host preset {path.name}: missing field {e.args[0]!r}") from e
    numbers = (preset.compute_scale, preset.call_scale, preset.round_trip_scale)
    if preset.cores < 1 or min(numbers) <= 0:
        raise HardwareSpecError(
            f"host preset {path.name}: cores must be >= 1 and the scales > 0; got "
            f"cores={preset.cores}, scales={numbers}"
        )
    return preset


@functools.cache
def _registry() -> dict[str, HostPreset]:
    table: dict[str, HostPreset] = {}
    for path in sorted(_FOLDER.glob("*.toml")):
        preset = _parse(path)
        for key in (preset.name, *preset.aliases):
            table[key.lower()] = preset
    return table


def list_hosts() -> list[str]:
    """Names of the host presets, sorted."""
    return sorted({p.name for p in _registry().values()})


def load_host(name: str) -> HostPreset:
    """The host preset called ``name`` (or one of its aliases; case-insensitive).

    Raises:
        HardwareSpecError: no such preset.
    """
    preset = _registry().get(str(name).lower())
    if preset is None:
        raise HardwareSpecError(
            f"unknown host preset {name!r}; expected one of {', '.join(list_hosts())}"
        )
    return preset


def default_host(system: SystemSpec) -> str:
    """The host the vendor shipped with ``system``: the IPU-Server (Dell DSS 8440) for C2 cards
    (and any GC2 system), the dual EPYC 7742 server for IPU-Machine systems."""
    name = _SHIPPED_WITH.get(str(getattr(system, "name", "")))
    if name is None and getattr(getattr(system, "ipu", None), "name", "") == "GC2":
        name = _SHIPPED_WITH["C2"]
    return name or REFERENCE_HOST


def plausible_hosts(system: SystemSpec) -> list[str]:
    """Host presets that may drive ``system`` (its default first), for uncertainty ranges."""
    first = default_host(system)
    name = str(getattr(system, "name", ""))
    others = [
        p
        for p in list_hosts()
        if p != first and (not load_host(p).plausible_for or name in load_host(p).plausible_for)
    ]
    return [first, *others]


def with_host(system: SystemSpec, host: str = "", current: str = REFERENCE_HOST) -> SystemSpec:
    """``system`` driven by the host preset ``host`` ("" = :func:`default_host`).

    The system's host figures hold for the preset ``current`` (a system preset's hold for
    :data:`REFERENCE_HOST`); each is rescaled by the ratio of the chosen preset's figure to the
    current one's: the round trip and stream-copy sync by ``round_trip_scale``, the host side of
    stream copies (memory copies) by ``compute_scale``; the input pipeline takes the preset's
    cores and scales outright.
    """
    preset = load_host(host or default_host(system))
    old = getattr(system, "host", None)
    if old is None:  # not a SystemSpec (a test double): nothing to rescale
        return system
    ref = load_host(current)
    trip = preset.round_trip_scale / ref.round_trip_scale
    changes: dict[str, float] = {
        "cpu_cores": preset.cores,
        "cpu_compute_scale": preset.compute_scale,
        "cpu_call_scale": preset.call_scale,
        "per_execution_overhead_s": old.per_execution_overhead_s * trip,
        "stream_copy_overhead_s": old.stream_copy_overhead_s * trip,
        "stream_bandwidth_bytes_per_s": old.stream_bandwidth_bytes_per_s
        * ref.compute_scale
        / preset.compute_scale,
    }
    note = f"D: host preset {preset.name} (ipusim/hardware/hosts); "
    sources = dict(old.field_sources)
    sources.update({field: note + sources.get(field, "") for field in changes})
    new = dataclasses.replace(old, **changes, field_sources=sources)
    return dataclasses.replace(system, host=new)
