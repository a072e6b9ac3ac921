"""load_system / get_chip: user TOML files, overrides, sources of overridden figures, errors."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from ipusim.hardware import IPUSpec, get_chip, load_system


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_toml_override_of_a_nested_field_changes_exactly_that_field(tmp_path):
    path = write(
        tmp_path,
        "fast.toml",
        """
        base = "M2000"
        [ipu]
        clock = "1.4GHz"
        """,
    )
    base = load_system("M2000")
    loaded = load_system(path)
    expected = dataclasses.replace(base, ipu=dataclasses.replace(base.ipu, clock_hz=1.4e9))
    assert loaded == expected
    assert loaded != base
    changed = {p for p in base.sources if base.sources[p] != loaded.sources.get(p)}
    assert changed == {"ipu.clock_hz"}
    assert loaded.sources["ipu.clock_hz"] == f"U: set in {path.resolve()}"


def test_dotted_keys_short_names_and_sources_in_a_file(tmp_path):
    path = write(
        tmp_path,
        "mine.toml",
        """
        base = "POD16"
        name = "my-pod"
        host.per_execution_overhead = "1ms"
        streaming_memory = "none"
        [ipu.amp_flops_per_cycle_per_tile]
        "fp16.16" = 100
        [ipu_link]
        latency_s = 1e-6
        [sources]
        "host.per_execution_overhead" = "M: measured on our host"
        """,
    )
    system = load_system(path)
    assert system.name == "my-pod"
    assert system.host.per_execution_overhead_s == 1e-3
    assert system.streaming_memory is None
    assert system.ipu.amp_flops_per_cycle("fp16.16") == 100.0
    assert system.ipu.amp_flops_per_cycle("fp32") == 32.0  # untouched entry kept
    assert system.ipu_link.latency_s == 1e-6
    assert system.sources["host.per_execution_overhead_s"] == "M: measured on our host"
    assert "host.per_execution_overhead_s" not in system.estimates()
    assert not any(p.startswith("streaming_memory") for p in system.sources)
    assert system.num_ipus == 16  # inherited


def test_overrides_mapping_nested_dotted_and_chip():
    system = load_system(
        "M2000",
        overrides={
            "chip": "Bow",
            "host": {"latency": "1us"},
            "gw_link.bandwidth": "200Gb/s",
            "sources": {"gw_link.bandwidth": "E: what if"},
        },
    )
    assert system.ipu == get_chip("Bow")
    assert system.sources["ipu.clock_hz"] == get_chip("Bow").sources["clock_hz"]
    assert system.host.latency_s == 1e-6
    assert system.gw_link.bandwidth_bytes_per_s == 25e9
    assert system.sources["gw_link.bandwidth_bytes_per_s"] == "E: what if"
    assert system.sources["host.latency_s"] == "U: set in overrides"


def test_override_with_a_spec_instance_and_num_ipus():
    chip = dataclasses.replace(get_chip("GC200"), tiles=1000)
    system = load_system("POD16", overrides={"ipu": chip}, num_ipus=8)
    assert system.ipu.tiles == 1000
    assert system.num_ipus == 8
    assert load_system(system) is system
    assert load_system(system, num_ipus=2).num_ipus == 2


def test_num_ipus_argument():
    assert load_system(None, num_ipus=4).num_ipus == 4
    with pytest.raises(ValueError, match="num_ipus: 5 exceeds the 4 IPUs of system 'IPU'"):
        load_system(num_ipus=5)
    assert load_system("C2", num_ipus=16).num_chassis == 8


@pytest.mark.parametrize(
    ("overrides", "suggestion"),
    [
        ({"host.per_exec_overhead": "1ms"}, "did you mean 'host.per_execution_overhead'?"),
        ({"per_execution_overhead": "1ms"}, "did you mean 'host.per_execution_overhead'?"),
        ({"ipu": {"clok": "1GHz"}}, "did you mean 'ipu.clock'?"),
        ({"streaming_memory.bandwith_per_ipu": "1GB/s"}, "'streaming_memory.bandwidth_per_ipu'"),
        ({"num_ipu": 2}, "did you mean 'num_ipus'?"),
        ({"ipu.amp_flops_per_cycle_per_tile.fp61.16": 1}, "did you mean 'fp16.16'?"),
    ],
)
def test_unknown_keys_suggest_the_right_name(overrides, suggestion):
    with pytest.raises(ValueError) as info:
        load_system("M2000", overrides=overrides)
    assert suggestion in str(info.value)


def test_unknown_key_in_a_file_names_the_file(tmp_path):
    path = write(tmp_path, "typo.toml", 'base = "M2000"\n[host]\nlatncy = "1us"\n')
    with pytest.raises(
        ValueError, match=r"typo\.toml: unknown setting 'host\.latncy'.*'host\.latency'"
    ):
        load_system(path)


@pytest.mark.parametrize(
    ("overrides", "error", "words"),
    [
        ({"ipu.clock": "fast"}, ValueError, r"ipu\.clock_hz \(in overrides\): cannot use 'fast'"),
        ({"ipu.clock": "-1GHz"}, ValueError, "negative"),
        ({"ipu.tiles": "1472"}, TypeError, "ipu.tiles"),
        ({"ipu.tiles": 0}, ValueError, "IPUSpec.tiles: got 0"),
        ({"ipu.clock.hz": 1}, ValueError, "single value, not a group"),
        ({"host": 3}, TypeError, "'host' is a group of settings"),
        ({"host": "none"}, TypeError, "'host' is a group of settings"),
        ({"topology": "ring"}, ValueError, "expected one of ladder, m2000, pod-torus"),
        ({"base": "POD16"}, ValueError, "base cannot be overridden"),
        ({"sources": {"ipu.clock": "no flag here"}}, ValueError, "FLAG: text"),
        ({"sources": {"gw_link.ports": "S: x"}, "gw_link": "none"}, ValueError, "not set"),
    ],
)
def test_bad_overrides(overrides, error, words):
    with pytest.raises(error, match=words):
        load_system("M2000", overrides=overrides)


def test_unknown_preset_names_suggest():
    with pytest.raises(ValueError, match="unknown system 'POD12'; did you mean 'POD1"):
        load_system("POD12")
    with pytest.raises(ValueError, match="unknown chip 'GC300'; did you mean 'GC200'"):
        get_chip("GC300")
    with pytest.raises(FileNotFoundError, match="nothing.toml"):
        load_system("nothing.toml")
    with pytest.raises(TypeError, match="name_or_path_or_spec"):
        load_system(42)


def test_a_system_file_from_scratch(tmp_path):
    path = write(
        tmp_path,
        "scratch.toml",
        """
        kind = "system"
        name = "Lab"
        description = "two GC200 on a test bench"
        chip = "GC200"
        num_ipus = 2
        ipus_per_chassis = 2
        max_ipus = 2
        ipus_per_pod = 2
        topology = "ladder"
        [host]
        h2d_bandwidth = "15.754GB/s"
        d2h_bandwidth = "15.754GB/s"
        ipu_port_bandwidth = "15.754GB/s"
        latency = "1us"
        shared_by_ipus = 1
        per_execution_overhead = "1ms"
        stream_bandwidth = "2GB/s"
        stream_copy_overhead = "0.5us"
        cpu_cores = 16
        cpu_compute_scale = 1.0
        cpu_call_scale = 0.5
        [ipu_link]
        bandwidth = "32GB/s"
        efficiency = 0.85
        latency = "500ns"
        sync_per_hop = "15ns"
        links_per_ipu = 10
        links_between_neighbours = 3
        links_within_pair = 3
        """,
    )
    system = load_system(path)
    assert system.gw_link is None and system.streaming_memory is None
    assert system.host.h2d_bandwidth_bytes_per_s == 15.754e9
    assert system.sources["host.latency_s"].startswith("U: set in")
    assert system.missing_sources() == []


def test_missing_settings_are_listed(tmp_path):
    path = write(tmp_path, "partial.toml", 'name = "x"\ndescription = "y"\nchip = "GC2"\n')
    with pytest.raises(ValueError, match="missing settings num_ipus, .*host.*base = 'IPU'"):
        load_system(path)


def test_base_files_relative_paths_and_cycles(tmp_path):
    write(tmp_path, "a.toml", 'base = "POD64"\n[host]\nlatency = "3us"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    b = write(sub, "b.toml", 'base = "../a.toml"\nnum_ipus = 32\n')
    system = load_system(b)
    assert (system.num_ipus, system.host.latency_s, system.ipu.name) == (32, 3e-6, "GC200")
    write(tmp_path, "x.toml", 'base = "y.toml"\n')
    y = write(tmp_path, "y.toml", 'base = "x.toml"\n')
    with pytest.raises(ValueError, match="cycle"):
        load_system(y)


def test_wrong_kind_and_invalid_toml(tmp_path):
    chip_file = write(tmp_path, "chip.toml", 'kind = "chip"\nbase = "GC200"\nclock = "1.5GHz"\n')
    with pytest.raises(ValueError, match="kind is 'chip'; expected 'system'"):
        load_system(chip_file)
    broken = write(tmp_path, "broken.toml", "base = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_system(broken)


def test_a_spec_of_the_other_kind_is_refused():
    system = load_system("POD16")
    assert get_chip(system.ipu) is system.ipu and load_system(system) is system
    with pytest.raises(
        TypeError, match="got SystemSpec; expected a chip name or path \\(or the IPUSpec"
    ):
        get_chip(system)
    with pytest.raises(TypeError, match="got IPUSpec; expected a system name or path"):
        load_system(system.ipu)


def test_chip_file_with_base_and_a_new_chip_via_system_file(tmp_path):
    chip_file = write(
        tmp_path,
        "c600.toml",
        """
        kind = "chip"
        base = "GC200"
        name = "C600"
        clock = "1.486GHz"
        [sources]
        clock = "D: 280 TF / (1472 x 128)"
        """,
    )
    chip = get_chip(chip_file)
    assert isinstance(chip, IPUSpec)
    assert (chip.name, chip.clock_hz, chip.tiles) == ("C600", 1.486e9, 1472)
    assert chip.sources["clock_hz"] == "D: 280 TF / (1472 x 128)"
    system_file = write(tmp_path, "c600sys.toml", 'base = "IPU"\nchip = "c600.toml"\n')
    assert load_system(system_file).ipu == chip


def test_new_precision_only_in_a_table_built_from_scratch(tmp_path):
    path = write(
        tmp_path,
        "fp8.toml",
        """
        kind = "chip"
        base = "GC200"
        [vector_flops_per_cycle_per_tile]
        fp8 = 16
        """,
    )
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        get_chip(path)


def test_unquoted_dotted_precision_keys_in_toml(tmp_path):
    path = write(
        tmp_path,
        "rates.toml",
        """
        base = "IPU"
        [ipu.amp_flops_per_cycle_per_tile]
        fp16.16 = 120
        fp32 = 30
        """,
    )
    amp = load_system(path).ipu.amp_flops_per_cycle_per_tile
    assert dict(amp) == {"fp16.16": 120.0, "fp16.32": 64.0, "fp32": 30.0}
