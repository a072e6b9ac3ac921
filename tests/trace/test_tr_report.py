"""Report: figures, summary text, and the report folder (atomic save, load round trip)."""

from __future__ import annotations

import json
import math
import os

import pandas as pd
import pytest

from ipusim import _files
from ipusim.lowering.program import IPUMemoryPlan, MemoryItem
from ipusim.trace import (
    HOST,
    Report,
    Trace,
    TraceError,
    TraceRecorder,
    memory_report,
    to_chrome_json,
    utilisation,
)

FILES = [
    "liveness.csv",
    "memory.csv",
    "memory_items.csv",
    "report.json",
    "summary.txt",
    "tiles.csv",
    "trace.json",
    "trace.npz",
    "utilisation.csv",
]
MIB = 1 << 20


def _trace() -> Trace:
    r = TraceRecorder()
    r.add(HOST, "host-io", "infeed", 0, 100_000, phase="io", bytes=4096)
    r.add(
        0,
        "compute",
        "dense/matmul",
        100_000,
        600_000,
        layer="dense",
        op="matmul",
        phase="fwd",
        step=0,
        flops=125_000_000,
    )
    r.add(0, "exchange", "dense/exchange", 600_000, 850_000, layer="dense", phase="fwd", step=0)
    r.add(0, "sync", "dense/sync", 850_000, 1_000_000, phase="fwd", step=0)
    return r.freeze()


def _plans() -> tuple[IPUMemoryPlan, ...]:
    return (
        IPUMemoryPlan(
            ipu=0,
            items=(
                MemoryItem("dense/kernel", "weights", 2 * MIB),
                MemoryItem("NA", "activations", MIB // 2),  # a name CSV readers turn into NaN
                MemoryItem("dense/kernel/velocity", "optimizer-state", 2 * MIB),
                MemoryItem("code", "code", MIB // 2),
            ),
            budget_bytes=10 * MIB,
            tile_bytes=(MIB, 2 * MIB),
            tile_budget_bytes=4 * MIB,
        ),
    )


def _report(**overrides) -> Report:
    fields = {
        "trace": _trace(),
        "samples": 128,
        "steps": 4,
        "seconds": 1e-6,
        "memory_plans": _plans(),
        "peak_flops_per_s": {0: 250e12},
        "system_name": "M2000",
        "kind": "train",
        "extra": {"compile_s": 0.5, "note": "seed run", "missing": math.nan},
    }
    fields.update(overrides)
    return Report(**fields)


def test_figures() -> None:
    report = _report()
    assert report.simulated_seconds == 1e-6
    assert report.throughput_samples_per_s == 128 / 1e-6
    assert report.end_ps == 1_000_000
    pd.testing.assert_frame_equal(report.utilisation, utilisation(_trace(), {0: 250e12}))
    row = report.utilisation.iloc[0]
    assert (row["compute_share"], row["exchange_share"]) == (0.5, 0.25)
    # Shares are multiples of 2**-53 (so they add up to exactly 1): 0.1 is off by < 2**-53.
    assert row["idle_share"] == pytest.approx(0.1, abs=2**-53)
    assert row["achieved_flops_per_s"] == 1.25e14 and row["fraction_of_peak"] == 0.5
    pd.testing.assert_frame_equal(report.memory, memory_report(_plans()))
    assert report.extra == {"compile_s": 0.5, "note": "seed run", "missing": None}


def test_seconds_longer_than_the_trace_count_as_idle() -> None:
    row = _report(seconds=2e-6).utilisation.iloc[0]
    assert row["total_s"] == 2e-6
    assert row["compute_share"] == 0.25
    assert row["idle_share"] == pytest.approx(0.55, abs=2**-53)


def test_summary_text() -> None:
    text = _report().summary()
    lines = text.splitlines()
    assert lines[0] == "ipusim report: train on M2000"
    assert lines[1] == (
        "  steps 4 | samples 128 | simulated time 1 µs | throughput 128,000,000.0 samples/s"
    )
    assert "Utilisation (share of the simulated time)" in lines
    header = next(line for line in lines if line.strip().startswith("IPU  compute"))
    ipu_row = lines[lines.index(header) + 1].split()
    # IPU, 6 states + idle, achieved TFLOP/s, peak TFLOP/s, of peak.
    assert ipu_row == [
        "0",
        "50.0%",
        "25.0%",
        "15.0%",
        "0.0%",
        "0.0%",
        "0.0%",
        "10.0%",
        "125.000",
        "250.00",
        "50.0%",
    ]
    memory_header = next(line for line in lines if line.strip().startswith("IPU  weights"))
    memory_row = lines[lines.index(memory_header) + 1].split()
    assert memory_row == [
        "0",
        "2.00",
        "2.00",
        "0.00",
        "0.50",
        "0.50",
        "0.00",
        "5.00",
        "10.00",
        "50.0%",
        "2,048.0",  # the busiest tile (KiB)
        "50.0%",  # of its 4 MiB
    ]
    assert (
        "  largest on IPU 0: dense/kernel (weights) 2.00 MiB; dense/kernel/velocity "
        "(optimizer-state) 2.00 MiB; NA (activations) 0.50 MiB"
    ) in lines
    assert "  compile_s: 0.5" in lines and "  note: seed run" in lines
    assert str(_report()) == text


def test_invalid_reports() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        _report(kind="training")
    with pytest.raises(ValueError, match="samples must be an integer >= 0"):
        _report(samples=-1)
    with pytest.raises(ValueError, match="seconds must be a finite number"):
        _report(seconds=math.inf)
    with pytest.raises(ValueError, match=r"extra\['curve'\] must be a number"):
        _report(extra={"curve": [1, 2]})
    with pytest.raises(TypeError, match="trace must be a Trace"):
        _report(trace=None)
    zero = _report(seconds=0.0, trace=Trace.empty())
    assert math.isnan(zero.throughput_samples_per_s)
    assert "throughput n/a samples/s" in zero.summary()


def test_save_writes_every_file(tmp_path) -> None:
    report = _report()
    folder = report.save(tmp_path / "run")
    assert sorted(os.listdir(folder)) == FILES  # and no temporary file
    assert json.loads((folder / "trace.json").read_text()) == to_chrome_json(report.trace)
    assert Trace.load(folder / "trace.npz") == report.trace
    assert (folder / "summary.txt").read_text() == report.summary() + "\n"
    figures = json.loads((folder / "report.json").read_text())
    assert figures["samples"] == 128 and figures["steps"] == 4 and figures["seconds"] == 1e-6
    assert figures["throughput_samples_per_s"] == 128e6
    assert figures["peak_flops_per_s"] == {"0": 250e12}
    assert figures["trace_fingerprint"] == report.trace.fingerprint()
    utilisation_csv = pd.read_csv(folder / "utilisation.csv")
    pd.testing.assert_frame_equal(utilisation_csv, report.utilisation)


def test_load_round_trip(tmp_path) -> None:
    report = _report()
    loaded = Report.load(report.save(tmp_path / "run"))
    assert loaded.trace == report.trace
    assert loaded.trace.fingerprint() == report.trace.fingerprint()
    for name in ("samples", "steps", "seconds", "peak_flops_per_s", "system_name", "kind", "extra"):
        assert getattr(loaded, name) == getattr(report, name), name
    assert loaded.memory_plans == ()
    pd.testing.assert_frame_equal(loaded.memory, report.memory)
    pd.testing.assert_frame_equal(loaded.memory_items, report.memory_items)
    pd.testing.assert_frame_equal(loaded.utilisation, report.utilisation)
    assert loaded.summary() == report.summary()
    # Saving the loaded report gives the same files.
    again = loaded.save(tmp_path / "again")
    for name in FILES:
        assert (again / name).read_bytes() == (tmp_path / "run" / name).read_bytes() or (
            name == "trace.npz"  # zip members carry their write time
        ), name


def test_save_is_deterministic(tmp_path) -> None:
    _report().save(tmp_path / "a")
    _report().save(tmp_path / "b")
    for name in ("trace.json", "summary.txt", "report.json", "utilisation.csv", "memory.csv"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name


def test_failed_save_writes_nothing(tmp_path, monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise OSError("disk full")

    folder = tmp_path / "run"
    _report(samples=1).save(folder)
    before = {name: (folder / name).read_bytes() for name in FILES}
    monkeypatch.setattr(_files.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        _report().save(folder)
    assert sorted(os.listdir(folder)) == FILES
    assert {name: (folder / name).read_bytes() for name in FILES} == before

    monkeypatch.undo()
    monkeypatch.setattr(Report, "summary", lambda self, largest_items=3: boom())
    with pytest.raises(OSError, match="disk full"):
        _report().save(tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_load_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no report folder"):
        Report.load(tmp_path / "missing")
    folder = _report().save(tmp_path / "run")
    (folder / "report.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(TraceError, match="is not an ipusim report"):
        Report.load(folder)
    (folder / "report.json").unlink()
    with pytest.raises(FileNotFoundError, match="has no report.json"):
        Report.load(folder)
