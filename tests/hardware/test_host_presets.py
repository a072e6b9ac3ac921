"""Host presets: their ratios are the ones bench/host/scale_presets.py derives from published CPU
figures, every figure has a flagged source, and a bad preset file is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipusim.errors import HardwareSpecError
from ipusim.hardware import parse_flags
from ipusim.hardware.hosts import REFERENCE_HOST, _parse, list_hosts, load_host

DERIVED = Path(__file__).parents[2] / "bench" / "host" / "results" / "presets.json"


def test_preset_ratios_are_the_derived_ones() -> None:
    derived = json.loads(DERIVED.read_text())
    assert set(derived) == set(list_hosts())
    for name, ratios in derived.items():
        preset = load_host(name)
        assert preset.compute_scale == ratios["compute_scale"]
        assert preset.call_scale == ratios["call_scale"]
        assert preset.round_trip_scale == ratios["round_trip_scale"]
    assert load_host(REFERENCE_HOST).round_trip_scale == 1.0


def test_every_ratio_and_cpu_figure_has_a_flagged_source() -> None:
    for name in list_hosts():
        preset = load_host(name)
        for key in ("cpu", "cores", "boost_ghz", "compute_scale", "call_scale", "round_trip_scale"):
            assert parse_flags(preset.sources[key]), (name, key)


def test_presets_are_found_by_alias_in_any_case() -> None:
    assert load_host("dell dss8440").name == "Xeon-8168"
    assert load_host("EPYC7742").name == "EPYC-7742"
    with pytest.raises(HardwareSpecError, match="unknown host preset"):
        load_host("Pentium-4")


def test_a_preset_file_without_a_figure_or_with_a_zero_scale_is_refused(tmp_path) -> None:
    import ipusim.hardware.hosts as hosts

    source = (Path(hosts.__file__).parent / "epyc7742.toml").read_text()
    missing = tmp_path / "missing.toml"
    missing.write_text(source.replace("cores = 128\n", ""))
    with pytest.raises(HardwareSpecError, match="cores"):
        _parse(missing)
    zero = tmp_path / "zero.toml"
    zero.write_text(source.replace("call_scale = 0.25", "call_scale = 0.0"))
    with pytest.raises(HardwareSpecError, match="scales"):
        _parse(zero)
