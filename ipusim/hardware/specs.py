"""Frozen hardware specs: the IPU chip, its links, the host, Streaming Memory and whole systems.

All figures are in base units named in the field: bytes, hertz, bytes per second, seconds, cycles.
Human strings ("624KiB", "1.325GHz") are parsed by :mod:`ipusim.hardware.units` at the boundary
(``load_system``); the constructors here take numbers only. Each spec also records where its figures
come from (``field_sources``, see :class:`ipusim.hardware._base.SpecBase`); prefer
``load_system(..., overrides=...)`` to ``dataclasses.replace`` so the sources stay right.

:class:`SystemSpec` puts them together into a machine of ``num_ipus`` IPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from ipusim.errors import ConfigurationError, HardwareSpecError, InvalidTypeError
from ipusim.hardware._base import SpecBase, sources_field, spec_field, validate_fields
from ipusim.hardware.table import PrecisionTable

__all__ = [
    "GENERATIONS",
    "GWLinkSpec",
    "HostSpec",
    "IPUSpec",
    "LinkSpec",
    "PrecisionTable",
    "StreamingMemorySpec",
    "SystemSpec",
]

GENERATIONS = ("ipu1", "ipu2", "bow")
Generation = Literal["ipu1", "ipu2", "bow"]


@dataclass(frozen=True, slots=True)
class IPUSpec(SpecBase):
    """One IPU chip (Colossus GC2, GC200 or Bow).

    Attributes:
        name: chip name, e.g. "GC200".
        generation: "ipu1" (GC2, Mk1), "ipu2" (GC200, Mk2) or "bow".
        tiles: tiles per IPU.
        threads_per_tile: hardware worker threads per tile.
        clock_hz: tile clock (Hz).
        sram_bytes_per_tile: In-Processor-Memory per tile (bytes).
        amp_flops_per_cycle_per_tile: AMP (matrix unit) FLOPs per cycle per tile by precision:
            "fp32", "fp16.16" (fp16 inputs, fp16 partials), "fp16.32" (fp32 partials).
        vector_flops_per_cycle_per_tile: vector-unit FLOPs per cycle per tile ("fp32", "fp16").
        exchange_bytes_per_cycle_per_tile: on-chip exchange bytes a tile sends (or receives) per
            cycle.
        local_memory_read_bytes_per_cycle_per_tile: peak SRAM read bytes per cycle per tile.
        local_memory_write_bytes_per_cycle_per_tile: peak SRAM write bytes per cycle per tile.
        local_memory_latency_cycles: SRAM access latency (cycles), hidden by the worker threads.
        onchip_sync_cycles: one BSP sync among the tiles of one IPU (cycles).
        vertex_overhead_cycles: fixed cost of launching one vertex (cycles).
        field_sources: ``{field path: "FLAG: source"}`` for this chip's figures.
    """

    name: str = spec_field("text")
    generation: Generation = spec_field("choice", choices=GENERATIONS)
    tiles: int = spec_field("count", positive=True)
    threads_per_tile: int = spec_field("count", positive=True)
    clock_hz: float = spec_field("hz", key="clock", positive=True)
    sram_bytes_per_tile: int = spec_field("size", key="sram_per_tile", positive=True)
    amp_flops_per_cycle_per_tile: PrecisionTable = spec_field("table", positive=True)
    vector_flops_per_cycle_per_tile: PrecisionTable = spec_field("table", positive=True)
    exchange_bytes_per_cycle_per_tile: float = spec_field("number", positive=True)
    local_memory_read_bytes_per_cycle_per_tile: float = spec_field("number", positive=True)
    local_memory_write_bytes_per_cycle_per_tile: float = spec_field("number", positive=True)
    local_memory_latency_cycles: int = spec_field("count")
    onchip_sync_cycles: int = spec_field("count")
    vertex_overhead_cycles: int = spec_field("count")
    field_sources: Mapping[str, str] = sources_field()

    def amp_flops_per_cycle(self, precision: str) -> float:
        """AMP FLOPs per cycle per tile at ``precision`` ("fp32", "fp16.16", "fp16.32").

        Raises:
            ValueError: unknown precision (the message lists the valid ones).
        """
        return self.amp_flops_per_cycle_per_tile.rate(
            precision, f"{self.name} amp_flops_per_cycle_per_tile"
        )

    def vector_flops_per_cycle(self, precision: str) -> float:
        """Vector-unit FLOPs per cycle per tile at ``precision`` ("fp32", "fp16").

        Raises:
            ValueError: unknown precision (the message lists the valid ones).
        """
        return self.vector_flops_per_cycle_per_tile.rate(
            precision, f"{self.name} vector_flops_per_cycle_per_tile"
        )

    @property
    def tile_cycles_per_s(self) -> float:
        """tiles × clock (tile-cycles per second)."""
        return self.tiles * self.clock_hz

    def peak_flops(self, precision: str) -> float:
        """Peak AMP FLOP/s of one IPU: tiles × clock × AMP FLOPs/cycle/tile."""
        return self.tile_cycles_per_s * self.amp_flops_per_cycle(precision)

    def vector_peak_flops(self, precision: str) -> float:
        """Peak vector-unit FLOP/s of one IPU: tiles × clock × vector FLOPs/cycle/tile."""
        return self.tile_cycles_per_s * self.vector_flops_per_cycle(precision)

    @property
    def sram_bytes(self) -> int:
        """Total In-Processor-Memory of one IPU (bytes)."""
        return self.tiles * self.sram_bytes_per_tile

    @property
    def exchange_bandwidth_bytes_per_s(self) -> float:
        """Aggregate on-chip exchange bandwidth per direction (bytes/s)."""
        return self.tile_cycles_per_s * self.exchange_bytes_per_cycle_per_tile

    def cycles_to_s(self, cycles: float) -> float:
        """Convert tile cycles to seconds at this chip's clock."""
        return cycles / self.clock_hz


@dataclass(frozen=True, slots=True)
class LinkSpec(SpecBase):
    """IPU-Links between IPUs.

    Attributes:
        bandwidth_bytes_per_s: raw bandwidth of one link in one direction (bytes/s).
        efficiency: share of the raw bandwidth a transfer achieves (0 < efficiency <= 1).
        latency_s: one-way latency of a transfer over one link (s).
        sync_per_hop_s: how long a sync signal takes to cross one IPU-to-IPU hop (s).
        links_per_ipu: IPU-Links on each IPU.
        links_between_neighbours: parallel links joining two directly connected IPUs of
            neighbouring rungs of the ladder.
        links_within_pair: parallel links joining the two IPUs of a pair (IPUs ``2r`` and
            ``2r + 1``, one card or one half of an IPU-Machine).
        field_sources: ``{field: "FLAG: source"}``.
    """

    bandwidth_bytes_per_s: float = spec_field("bandwidth", key="bandwidth", positive=True)
    efficiency: float = spec_field("number", positive=True)
    latency_s: float = spec_field("time", key="latency")
    sync_per_hop_s: float = spec_field("time", key="sync_per_hop")
    links_per_ipu: int = spec_field("count", positive=True)
    links_between_neighbours: int = spec_field("count", positive=True)
    links_within_pair: int = spec_field("count", positive=True)
    field_sources: Mapping[str, str] = sources_field()

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.efficiency > 1:
            raise HardwareSpecError(
                f"LinkSpec.efficiency must be in (0, 1], received {self.efficiency}; it is the "
                "share of the raw link bandwidth a transfer achieves"
            )
        if self.links_between_neighbours > self.links_per_ipu:
            raise HardwareSpecError(
                f"LinkSpec.links_between_neighbours ({self.links_between_neighbours}) cannot "
                f"exceed links_per_ipu ({self.links_per_ipu})"
            )

    @property
    def effective_bandwidth_bytes_per_s(self) -> float:
        """What one link delivers in one direction: raw bandwidth x efficiency (bytes/s)."""
        return self.bandwidth_bytes_per_s * self.efficiency

    @property
    def neighbour_bandwidth_bytes_per_s(self) -> float:
        """What all links to one neighbouring rung's IPU deliver in one direction (bytes/s)."""
        return self.effective_bandwidth_bytes_per_s * self.links_between_neighbours

    @property
    def pair_bandwidth_bytes_per_s(self) -> float:
        """What all links between the two IPUs of a pair deliver in one direction (bytes/s)."""
        return self.effective_bandwidth_bytes_per_s * self.links_within_pair

    def bandwidth_between(self, a: int, b: int) -> float:
        """One-direction bandwidth of a copy from IPU ``a`` to IPU ``b`` (bytes/s): the pair's
        links when they are the two IPUs of a pair, one neighbour's links otherwise."""
        if a // 2 == b // 2:
            return self.pair_bandwidth_bytes_per_s
        return self.neighbour_bandwidth_bytes_per_s


@dataclass(frozen=True, slots=True)
class HostSpec(SpecBase):
    """The host link: how input data, outputs and control reach the IPUs.

    A host link (a PCIe slot on C2 cards, one 100 GbE RoCE NIC per M2000) is shared by
    ``shared_by_ipus`` IPUs; each IPU also has its own port (``ipu_port_bandwidth_bytes_per_s``,
    PCIe to the gateway on an M2000) that caps what it can get alone.

    Attributes:
        h2d_bandwidth_bytes_per_s: host-to-device bandwidth of one host link (bytes/s).
        d2h_bandwidth_bytes_per_s: device-to-host bandwidth of one host link (bytes/s).
        ipu_port_bandwidth_bytes_per_s: per-IPU port bandwidth per direction (bytes/s).
        latency_s: one-way latency of a host transfer (s).
        shared_by_ipus: IPUs sharing one host link.
        per_execution_overhead_s: host round-trip cost paid once per execution, i.e. every
            ``steps_per_execution`` steps (s).
        stream_bandwidth_bytes_per_s: what one IPU's stream copies from the host achieve end to
            end (host-side copies into Poplar's buffers, the transfer), per direction (bytes/s).
        stream_copy_overhead_s: fixed cost of one stream copy on the IPU: the sync with the host
            that starts it (s).
        cpu_cores: cores of the host server, on which parallel input-pipeline stages run.
        cpu_compute_scale: the host's time for the compute part of input-pipeline work
            (copies, shuffles, casts) relative to ipusim's calibration machine
            (``ipusim.data.host_cost``).
        cpu_call_scale: the same for the call part (function calls, thread hand-offs).
        field_sources: ``{field: "FLAG: source"}``.
    """

    h2d_bandwidth_bytes_per_s: float = spec_field("bandwidth", key="h2d_bandwidth", positive=True)
    d2h_bandwidth_bytes_per_s: float = spec_field("bandwidth", key="d2h_bandwidth", positive=True)
    ipu_port_bandwidth_bytes_per_s: float = spec_field(
        "bandwidth", key="ipu_port_bandwidth", positive=True
    )
    latency_s: float = spec_field("time", key="latency")
    shared_by_ipus: int = spec_field("count", positive=True)
    per_execution_overhead_s: float = spec_field("time", key="per_execution_overhead")
    stream_bandwidth_bytes_per_s: float = spec_field(
        "bandwidth", key="stream_bandwidth", positive=True
    )
    stream_copy_overhead_s: float = spec_field("time", key="stream_copy_overhead")
    cpu_cores: int = spec_field("count", positive=True)
    cpu_compute_scale: float = spec_field("number", positive=True)
    cpu_call_scale: float = spec_field("number", positive=True)
    field_sources: Mapping[str, str] = sources_field()

    def bandwidth_bytes_per_s(self, direction: str) -> float:
        """Bandwidth of one host link in ``direction`` ("h2d" or "d2h") (bytes/s)."""
        if direction == "h2d":
            return self.h2d_bandwidth_bytes_per_s
        if direction == "d2h":
            return self.d2h_bandwidth_bytes_per_s
        raise HardwareSpecError(f"direction: got {direction!r}; expected 'h2d' or 'd2h'")

    def per_ipu_bandwidth_bytes_per_s(
        self, direction: str, sharing_ipus: int | None = None
    ) -> float:
        """Bandwidth one IPU gets when ``sharing_ipus`` IPUs stream over one host link at once.

        Args:
            direction: "h2d" or "d2h".
            sharing_ipus: IPUs streaming at the same time over the link, 1..shared_by_ipus;
                default ``shared_by_ipus`` (every seat busy).

        Returns:
            min(port bandwidth, link bandwidth / sharing_ipus) in bytes/s.
        """
        sharing = self.shared_by_ipus if sharing_ipus is None else sharing_ipus
        if isinstance(sharing, bool) or not isinstance(sharing, int) or sharing < 1:
            raise HardwareSpecError(f"sharing_ipus: got {sharing_ipus!r}; expected an int >= 1")
        sharing = min(sharing, self.shared_by_ipus)
        return min(
            self.ipu_port_bandwidth_bytes_per_s, self.bandwidth_bytes_per_s(direction) / sharing
        )


@dataclass(frozen=True, slots=True)
class StreamingMemorySpec(SpecBase):
    """Streaming Memory: DRAM behind the IPU-Gateway (remote buffers, offloaded optimizer state).

    Attributes:
        capacity_bytes_per_ipu: Streaming Memory available to one IPU (bytes).
        bandwidth_bytes_per_s_per_ipu: transfer bandwidth one IPU gets, per direction (bytes/s).
        latency_s: latency of one remote-buffer transfer (s).
        shared_gateway_bandwidth_bytes_per_s: total Streaming Memory bandwidth of one gateway
            (one chassis), shared by its IPUs (bytes/s).
        field_sources: ``{field: "FLAG: source"}``.
    """

    capacity_bytes_per_ipu: int = spec_field("size", key="capacity_per_ipu", positive=True)
    bandwidth_bytes_per_s_per_ipu: float = spec_field(
        "bandwidth", key="bandwidth_per_ipu", positive=True
    )
    latency_s: float = spec_field("time", key="latency")
    shared_gateway_bandwidth_bytes_per_s: float = spec_field(
        "bandwidth", key="shared_gateway_bandwidth", positive=True
    )
    field_sources: Mapping[str, str] = sources_field()


@dataclass(frozen=True, slots=True)
class GWLinkSpec(SpecBase):
    """GW-Links: chassis-to-chassis links between IPU-Gateways (RoCE over 100 GbE).

    Attributes:
        bandwidth_bytes_per_s: bandwidth of one port in one direction (bytes/s).
        ports: GW-Link ports per chassis.
        latency_s: one-way latency (s).
        collective_bandwidth_bytes_per_s: the rate, in one direction, at which one Pod's share
            of a cross-Pod collective crosses the GW-Links (bytes/s); the ports' line rate
            bounds it from above (the lower of the two applies).
        field_sources: ``{field: "FLAG: source"}``.
    """

    bandwidth_bytes_per_s: float = spec_field("bandwidth", key="bandwidth", positive=True)
    ports: int = spec_field("count", positive=True)
    latency_s: float = spec_field("time", key="latency")
    collective_bandwidth_bytes_per_s: float = spec_field(
        "bandwidth", key="collective_bandwidth", positive=True
    )
    field_sources: Mapping[str, str] = sources_field()


TOPOLOGIES = ("ladder", "m2000", "pod-torus")


@dataclass(frozen=True, slots=True)
class SystemSpec(SpecBase):
    """A machine: ``num_ipus`` identical IPUs in chassis, with host, IPU-Links and gateways.

    A chassis is a C2 card (2 IPUs) or an IPU-M2000 / Bow-2000 (4 IPUs). IPU ``i`` sits in chassis
    ``i // ipus_per_chassis``; the last chassis may be partly used.

    Attributes:
        name: preset or user name, e.g. "POD16".
        description: one line for people.
        ipu: the chip.
        num_ipus: IPUs in use.
        ipus_per_chassis: IPUs per card or chassis (C2: 2; M2000, Bow-2000: 4).
        max_ipus: most IPUs the system holds (bounds ``with_num_ipus``).
        ipus_per_pod: IPUs one Pod joins with IPU-Links (a C2 ladder, an M2000, a POD16 or
            POD64); Pods are joined by GW-Links.
        topology: "ladder" (C2 cards joined by IPU-Link cables), "m2000" (one IPU-M2000 or
            Bow-2000 chassis) or "pod-torus" (chassis stacked into a Pod, IPU-Links in a torus).
        host: the host link.
        ipu_link: the IPU-Links.
        gw_link: the GW-Links between chassis, or None (C2 cards have none).
        streaming_memory: the Streaming Memory behind the gateway, or None (C2 cards have none).
        field_sources: ``{field: "FLAG: source"}`` for the system's own figures; see ``sources``
            for the whole tree.
    """

    name: str = spec_field("text")
    description: str = spec_field("text")
    ipu: IPUSpec = spec_field("spec", spec=IPUSpec)
    num_ipus: int = spec_field("count", positive=True)
    ipus_per_chassis: int = spec_field("count", positive=True)
    max_ipus: int = spec_field("count", positive=True)
    ipus_per_pod: int = spec_field("count", positive=True)
    topology: str = spec_field("choice", choices=TOPOLOGIES)
    host: HostSpec = spec_field("spec", spec=HostSpec)
    ipu_link: LinkSpec = spec_field("spec", spec=LinkSpec)
    gw_link: GWLinkSpec | None = spec_field("spec", spec=GWLinkSpec, optional=True)
    streaming_memory: StreamingMemorySpec | None = spec_field(
        "spec", spec=StreamingMemorySpec, optional=True
    )
    field_sources: Mapping[str, str] = sources_field()

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.num_ipus > self.max_ipus:
            raise HardwareSpecError(
                f"SystemSpec.num_ipus ({self.num_ipus}) exceeds max_ipus ({self.max_ipus}) of "
                f"system {self.name!r} (topology {self.topology!r}); pick a larger system "
                "(list_systems() names the presets) or raise max_ipus"
            )
        if self.max_ipus % self.ipus_per_pod or self.ipus_per_pod % self.ipus_per_chassis:
            raise HardwareSpecError(
                f"system {self.name!r}: ipus_per_pod ({self.ipus_per_pod}) must be a multiple "
                f"of ipus_per_chassis ({self.ipus_per_chassis}) and divide max_ipus "
                f"({self.max_ipus}); a Pod is whole chassis, a system whole Pods"
            )

    @property
    def num_pods(self) -> int:
        """Pods (IPU-Link domains) holding the IPUs in use: ceil(num_ipus / ipus_per_pod)."""
        return -(-self.num_ipus // self.ipus_per_pod)

    def pod_of(self, ipu: int) -> int:
        """The Pod (IPU-Link domain) holding IPU ``ipu``."""
        return self._check_ipu(ipu, "ipu") // self.ipus_per_pod

    def ipu_link_hops(self, a: int, b: int) -> int:
        """IPU-Link hops between IPUs ``a`` and ``b`` of one Pod.

        The IPUs of a Pod form a ladder: IPUs ``2r`` and ``2r + 1`` are the two ends of rung
        ``r``; a route crosses the rung first, then goes up or down the rails (graphcore/poplibs
        ``lib/poplibs_test/Util.cpp``, the multi-IPU test model). In a ``pod-torus`` the rails wrap
        around.

        Raises:
            ValueError: the IPUs sit in different Pods (GW-Links join them, not IPU-Links).
        """
        if self.pod_of(a) != self.pod_of(b):
            raise ConfigurationError(
                f"IPUs {a} and {b} are in different Pods of system {self.name!r}; GW-Links join "
                "Pods, so there is no IPU-Link route between them"
            )
        a, b = a % self.ipus_per_pod, b % self.ipus_per_pod
        rungs = -(-self.ipus_per_pod // 2)
        along = abs(a // 2 - b // 2)
        if self.topology == "pod-torus":
            along = min(along, rungs - along)
        return along + (a % 2 != b % 2)

    def sync_hops(self, ipus: int) -> int:
        """Hops a sync signal crosses to reach every one of IPUs ``0 .. ipus - 1`` (the farthest
        IPU of the Pod from IPU 0; 0 for one IPU)."""
        last = min(ipus, self.ipus_per_pod) - 1
        return max((self.ipu_link_hops(0, i) for i in range(last + 1)), default=0)

    @property
    def num_chassis(self) -> int:
        """Chassis (or C2 cards) holding the IPUs in use: ceil(num_ipus / ipus_per_chassis)."""
        return -(-self.num_ipus // self.ipus_per_chassis)

    def _check_ipu(self, index: object, argument: str) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidTypeError(
                f"{argument}: got {type(index).__name__} {index!r}; expected an int"
            )
        if not 0 <= index < self.num_ipus:
            raise HardwareSpecError(
                f"{argument}: IPU {index} does not exist; system {self.name!r} has IPUs "
                f"0..{self.num_ipus - 1}"
            )
        return index

    def chassis_of(self, ipu: int) -> int:
        """The chassis (or C2 card) index holding IPU ``ipu``."""
        return self._check_ipu(ipu, "ipu") // self.ipus_per_chassis

    def same_chassis(self, a: int, b: int) -> bool:
        """True when IPUs ``a`` and ``b`` sit in the same chassis (or C2 card)."""
        return self._check_ipu(a, "a") // self.ipus_per_chassis == (
            self._check_ipu(b, "b") // self.ipus_per_chassis
        )

    def with_num_ipus(self, num_ipus: int) -> SystemSpec:
        """A copy using ``num_ipus`` IPUs: a partition of this system (no rounding to chassis).

        Args:
            num_ipus: 1 <= num_ipus <= max_ipus.

        Raises:
            TypeError: not an int.
            ValueError: out of range; the message names the limit and suggests a larger system.
        """
        if isinstance(num_ipus, bool) or not isinstance(num_ipus, int):
            raise InvalidTypeError(
                f"num_ipus: got {type(num_ipus).__name__} {num_ipus!r}; expected an int >= 1"
            )
        if num_ipus < 1:
            raise HardwareSpecError(f"num_ipus: got {num_ipus}; expected an int >= 1")
        if num_ipus > self.max_ipus:
            raise HardwareSpecError(
                f"num_ipus: {num_ipus} exceeds the {self.max_ipus} IPUs of system {self.name!r} "
                f"(topology {self.topology!r}); pick a larger system (list_systems() names the "
                "presets) or raise max_ipus"
            )
        if num_ipus == self.num_ipus:
            return self
        sources = dict(self.field_sources)
        sources["num_ipus"] = f"U: with_num_ipus({num_ipus})"
        return replace(self, num_ipus=num_ipus, field_sources=sources)

    def peak_flops(self, precision: str) -> float:
        """Peak AMP FLOP/s of all ``num_ipus`` IPUs at ``precision``."""
        return self.num_ipus * self.ipu.peak_flops(precision)

    @property
    def sram_bytes(self) -> int:
        """In-Processor-Memory of all ``num_ipus`` IPUs (bytes)."""
        return self.num_ipus * self.ipu.sram_bytes

    def host_bandwidth_per_ipu_bytes_per_s(self, direction: str = "h2d") -> float:
        """Host bandwidth each IPU gets when all IPUs in use stream at once (bytes/s).

        IPUs fill host links in order, so min(num_ipus, shared_by_ipus) share each link.
        """
        sharing = min(self.num_ipus, self.host.shared_by_ipus)
        return self.host.per_ipu_bandwidth_bytes_per_s(direction, sharing)
