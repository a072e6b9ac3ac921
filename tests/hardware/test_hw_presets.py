"""Presets: every chip and system loads, matches the reference's published figures, and every
numeric figure carries a flagged source."""

from __future__ import annotations

import dataclasses
from importlib import resources

import pytest

from ipusim.hardware import (
    PrecisionTable,
    SystemSpec,
    get_chip,
    list_chips,
    list_systems,
    load_system,
    parse_flags,
)

SYSTEMS = [
    "C2",
    "IPU",
    "M2000",
    "POD16",
    "POD64",
    "POD128",
    "POD256",
    "Bow-2000",
    "Bow-POD16",
    "Bow-POD64",
    "Bow-POD128",
    "Bow-POD256",
]
CHIPS = ["GC2", "GC200", "Bow"]
TF = 1e12


def test_all_presets_are_listed_and_found_as_package_data():
    assert list_systems() == SYSTEMS
    assert list_chips() == CHIPS
    folder = resources.files("ipusim.hardware").joinpath("presets")
    names = sorted(item.name for item in folder.iterdir() if item.name.endswith(".toml"))
    assert len(names) == len(SYSTEMS) + len(CHIPS)


@pytest.mark.parametrize("name", SYSTEMS)
def test_each_system_loads(name):
    system = load_system(name)
    assert isinstance(system, SystemSpec)
    assert system.name == name
    assert 1 <= system.num_ipus <= system.max_ipus


def test_default_system_is_one_gc200_in_an_m2000_seat():
    system = load_system()
    assert system.name == "IPU"
    assert system.num_ipus == 1
    assert system.ipu == get_chip("GC200")
    m2000 = load_system("M2000")
    assert system.host == m2000.host
    assert system.streaming_memory == m2000.streaming_memory
    assert system.gw_link == m2000.gw_link


def _within(value: float, published: float, tolerance: float = 0.005) -> bool:
    return abs(value - published) <= tolerance * published


@pytest.mark.parametrize(
    ("chip", "precision", "published_tflops"),
    [
        ("GC200", "fp16.16", 249.7),  # POD128 datasheet 31.955 PF / 128
        ("GC200", "fp32", 62.4),  # 7.989 PF / 128
        ("GC200", "fp16.32", 125.0),  # HC33 notes "about 125"
        ("GC2", "fp32", 31.1),  # Citadel
        ("GC2", "fp16.32", 124.5),
        ("GC2", "fp16.16", 124.5),
        ("Bow", "fp16.16", 348.6),  # Pod256 89.23 PF / 256
        ("Bow", "fp16.16", 350.0),  # Bow-2000 datasheet, rounded
        ("Bow", "fp32", 87.1),  # 22.31 PF / 256
    ],
)
def test_peak_flops_match_published(chip, precision, published_tflops):
    assert _within(get_chip(chip).peak_flops(precision), published_tflops * TF)


@pytest.mark.parametrize(
    ("system", "precision", "published_pflops"),
    [
        ("POD64", "fp16.16", 15.978),  # POD64 datasheet
        ("M2000", "fp16.16", 1.0),  # M2000 "1 PetaFLOP"
        ("Bow-2000", "fp16.16", 1.4),  # Bow-2000 datasheet
        ("Bow-POD64", "fp32", 22.31 / 4),  # Pod256 FP32 scaled to 64 IPUs
    ],
)
def test_system_peaks_match_published(system, precision, published_pflops):
    assert _within(load_system(system).peak_flops(precision), published_pflops * 1e15, 0.01)


def test_chip_memory_and_exchange_by_hand():
    gc200, gc2, bow = get_chip("GC200"), get_chip("GC2"), get_chip("Bow")
    assert gc200.sram_bytes == 897 * 2**20  # "624.0 kB / 897.0 MB"
    assert gc2.sram_bytes == 304 * 2**20  # "256.0 kB / 304.0 MB"
    assert bow.sram_bytes == gc200.sram_bytes
    assert gc200.tile_cycles_per_s == pytest.approx(1.9504e12)
    assert gc2.tile_cycles_per_s == pytest.approx(1.9456e12)
    assert bow.tile_cycles_per_s == pytest.approx(2.7232e12)
    assert _within(gc200.exchange_bandwidth_bytes_per_s, 7.80e12)
    assert _within(bow.exchange_bandwidth_bytes_per_s, 10.9e12)
    assert _within(gc200.vector_peak_flops("fp32"), 7.8e12)
    assert gc200.vertex_overhead_cycles == 11
    assert gc200.onchip_sync_cycles == 150


def test_system_figures_from_the_reference():
    c2 = load_system("C2")
    assert (c2.num_ipus, c2.ipus_per_chassis, c2.topology) == (2, 2, "ladder")
    assert c2.streaming_memory is None and c2.gw_link is None
    assert c2.host.shared_by_ipus == 1
    assert _within(c2.host.h2d_bandwidth_bytes_per_s, 7.9e9)  # PCIe Gen3 x8
    assert c2.ipu_link.links_between_neighbours == 3
    assert c2.ipu_link.bandwidth_bytes_per_s * 2 == 64e9  # 64 GB/s bidirectional per link
    # Graphcore's multi-IPU test model: 128 Gibit/s per link, 0.85 efficiency, 15 ns per hop.
    link = load_system("M2000").ipu_link
    assert _within(link.bandwidth_bytes_per_s, 128 * 2**30 / 8)
    assert link.effective_bandwidth_bytes_per_s == pytest.approx(link.bandwidth_bytes_per_s * 0.85)
    assert link.sync_per_hop_s == 15e-9
    assert load_system("Bow-2000").ipu_link == link
    m2000 = load_system("M2000")
    assert m2000.host.h2d_bandwidth_bytes_per_s == 12.5e9  # 100 GbE
    assert m2000.host.shared_by_ipus == 4
    assert m2000.host_bandwidth_per_ipu_bytes_per_s() == 12.5e9 / 4
    assert load_system("IPU").host_bandwidth_per_ipu_bytes_per_s() == 12.5e9
    # Row P1: 2 x 7.46 MB of Adam state moved in 3.5 ms per update.
    assert _within(m2000.streaming_memory.bandwidth_bytes_per_s_per_ipu, 2 * 7.46e6 / 3.5e-3)
    assert m2000.streaming_memory.capacity_bytes_per_ipu == 128 * 10**9 // 4
    assert m2000.gw_link.ports == 2 and m2000.gw_link.bandwidth_bytes_per_s == 12.5e9
    assert m2000.host.per_execution_overhead_s == 2.8e-3
    assert load_system("Bow-2000").streaming_memory.capacity_bytes_per_ipu == 256 * 10**9 // 4
    for name, ipus in [("POD16", 16), ("POD64", 64), ("Bow-POD16", 16), ("Bow-POD64", 64)]:
        pod = load_system(name)
        assert (pod.num_ipus, pod.max_ipus, pod.num_chassis) == (ipus, ipus, ipus // 4)
        assert pod.topology == "pod-torus" and pod.num_pods == 1
    for name, ipus in [("POD128", 128), ("POD256", 256), ("Bow-POD256", 256)]:
        big = load_system(name)
        assert (big.num_ipus, big.ipus_per_pod, big.num_pods) == (ipus, 64, ipus // 64)
    assert load_system("Bow-POD16").ipu == get_chip("Bow")


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("pod16", "POD16"),
        ("IPU-POD16", "POD16"),
        ("ipu_pod64", "POD64"),
        ("Bow Pod16", "Bow-POD16"),
        ("bowpod64", "Bow-POD64"),
        ("bow2000", "Bow-2000"),
        ("IPU-M2000", "M2000"),
        ("c2", "C2"),
        ("default", "IPU"),
    ],
)
def test_system_names_are_case_insensitive_with_aliases(alias, name):
    assert load_system(alias).name == name


@pytest.mark.parametrize(
    ("alias", "name"),
    [("ipu1", "GC2"), ("Mk1", "GC2"), ("ipu2", "GC200"), ("MK2", "GC200"), ("bow", "Bow")],
)
def test_chip_aliases(alias, name):
    assert get_chip(alias).name == name


def _numeric_paths(spec, prefix=""):
    """Walk the dataclasses independently of the package's own helpers."""
    paths = []
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        path = prefix + field.name
        if isinstance(value, bool) or field.name == "field_sources":
            continue
        if isinstance(value, int | float):
            paths.append(path)
        elif isinstance(value, PrecisionTable):
            paths.extend(f"{path}.{precision}" for precision in value)
        elif dataclasses.is_dataclass(value):
            paths.extend(_numeric_paths(value, path + "."))
    return paths


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_numeric_figure_has_a_preset_source(name):
    system = load_system(name)
    paths = _numeric_paths(system)
    assert len(paths) >= 29  # guards the walk itself: C2 has no gateway parts
    for path in paths:
        assert path in system.sources, f"{name}: no source for {path}"
        flags = parse_flags(system.sources[path])
        assert "U" not in flags, f"{name}: {path} has no preset source"
        assert len(system.sources[path].split(":", 1)[1].strip()) > 10


@pytest.mark.parametrize("name", CHIPS)
def test_every_chip_figure_has_a_source(name):
    chip = get_chip(name)
    for path in _numeric_paths(chip):
        assert "U" not in parse_flags(chip.sources[path]), f"{name}: {path}"


# Figures the reference flags E (or that it lists as GAPs filled by assumption).
ESTIMATED_IN_EVERY_GATEWAY_SYSTEM = {
    "ipu.onchip_sync_cycles",
    "ipu.vector_flops_per_cycle_per_tile.fp16",
    "ipu.local_memory_read_bytes_per_cycle_per_tile",
    "host.per_execution_overhead_s",
    "host.latency_s",
    "ipu_link.latency_s",
    "gw_link.latency_s",
    "streaming_memory.latency_s",
}


@pytest.mark.parametrize("name", ["IPU", "M2000", "POD16", "POD64", "Bow-2000", "Bow-POD64"])
def test_estimates_contain_the_e_flagged_figures(name):
    estimates = set(load_system(name).estimates())
    assert ESTIMATED_IN_EVERY_GATEWAY_SYSTEM.issubset(estimates)
    assert "ipu.tiles" not in estimates
    assert "ipu.amp_flops_per_cycle_per_tile.fp16.16" not in estimates


def test_c2_and_chip_estimates():
    c2 = set(load_system("C2").estimates())
    assert {"ipu.onchip_sync_cycles", "ipu_link.sync_per_hop_s", "host.latency_s"} <= c2
    assert "ipu.clock_hz" not in c2
    assert "vector_flops_per_cycle_per_tile.fp16" in get_chip("GC200").estimates()
    assert "clock_hz" not in get_chip("Bow").estimates()
    assert "exchange_bytes_per_cycle_per_tile" in get_chip("Bow").estimates()


def test_presets_are_cached_and_hashable():
    assert load_system("POD16") is load_system("pod16")
    assert len({load_system(name) for name in SYSTEMS}) == len(SYSTEMS)
