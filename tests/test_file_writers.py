"""Files ipusim writes and the time it simulates (issue 24, items 1, 3 and 5).

- Round trips: ``Trace.load(trace.save())`` and ``Report.load(report.save())`` give back every
  saved field, for engine traces of every detail level and replica layout (a hypothesis
  property) and for the report of a real ``fit``.
- Writers: a full disk (``OSError(ENOSPC)`` from the write) and a read-only folder give one
  DiskWriteError naming the path, leave no folder and no temporary file; ``ipusim sweep -o``
  prints one line; a sweep removes temporary files left in its folder.
- Time: runs longer than simulated time holds are rejected before they run, naming the setting;
  runs at the extremes that fit still work.
"""

from __future__ import annotations

import errno
import os
import pathlib
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ipusim
from ipusim import _files, keras
from ipusim.cli import main as cli_main
from ipusim.engine import HostLink, HostOptions, RunPlan, simulate
from ipusim.engine.time_limit import MAX_RUN_PS
from ipusim.errors import ConfigurationError, DiskWriteError, HardwareSpecError
from ipusim.hardware import load_system
from ipusim.lowering.program import Block, PipelineProgram, Program, StageProgram, Superstep
from ipusim.sweep.outdir import claim_output
from ipusim.trace import Report, Trace, TraceRecorder

LINK = HostLink(1e12, 1e12, 0)
#: Examples of the round-trip property (IPUSIM_FILE_EXAMPLES=10000 for the long run).
EXAMPLES = int(os.environ.get("IPUSIM_FILE_EXAMPLES", "100"))


def _program(stages: int, micro_batches: int, replicas: int) -> Program:
    programs = tuple(
        StageProgram(
            s,
            s,
            Block((Superstep(f"s{s}/f", f"s{s}", "f", "fwd", 30 + s, 5, 2, flops=7),), f"st{s}"),
            Block((Superstep(f"s{s}/b", f"s{s}", "b", "bwd", 50, 5, 2, flops=9),)),
            Block((Superstep(f"s{s}/w", f"s{s}", "w", "weight-update", 10, 0, 1),)),
            send_forward_bytes=20,
            send_backward_bytes=20,
        )
        for s in range(stages)
    )
    pipeline = PipelineProgram(
        programs, "grouped", micro_batches, True, sync_ps=3, infeed_bytes=16, outfeed_bytes=8
    )
    return Program(
        "train",
        pipeline,
        batch_size=2,
        replicas=replicas,
        ipus_per_replica=stages,
        gradient_accumulation=micro_batches,
    )


def _same_trace(a: Trace, b: Trace) -> None:
    """Every saved field of a trace, compared one by one (not only the fingerprint)."""
    assert a == b and a.fingerprint() == b.fingerprint()
    assert (a.end_ps, a.replicas, a.ipus_per_replica) == (b.end_ps, b.replicas, b.ipus_per_replica)
    assert a.detail == b.detail and a.states_checked == b.states_checked
    np.testing.assert_array_equal(a.execution_end_ps, b.execution_end_ps)
    assert a.templates.same_as(b.templates) and a.counters.same_as(b.counters)
    for field, values in a.instances.items():
        np.testing.assert_array_equal(values, b.instances[field])
    pd.testing.assert_frame_equal(a.to_dataframe(replicas=True), b.to_dataframe(replicas=True))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    stages=st.integers(1, 3),
    micro_batches=st.sampled_from([1, 4]),
    replicas=st.sampled_from([1, 2]),
    executions=st.lists(st.sampled_from([4, 8]), min_size=1, max_size=3),
    detail=st.sampled_from(["full", "blocks", "summary", "auto"]),
    overhead=st.sampled_from([0, 300]),
    samples=st.integers(0, 10),
    seconds_extra=st.integers(0, 10**6),
)
def test_trace_and_report_round_trip(
    tmp_path, stages, micro_batches, replicas, executions, detail, overhead, samples, seconds_extra
) -> None:
    options = HostOptions(per_execution_overhead_ps=overhead, callback_ps=5)
    plan = RunPlan(tuple(executions))
    result = simulate(
        _program(stages, micro_batches, replicas),
        plan,
        options,
        LINK,
        detail=detail,
        record_budget=40,
    )
    trace = result.trace
    _same_trace(Trace.load(trace.save(tmp_path / "t.npz")), trace)
    report = Report(
        trace,
        samples=samples,
        steps=plan.total_steps,
        seconds=(result.end_ps + seconds_extra) / 1e12,
        peak_flops_per_s={i: 1e12 + i for i in range(stages)},
        system_name="POD16",
        kind="train",
        extra={"note": "x", "rate": 1.5, "none": None},
    )
    loaded = Report.load(report.save(tmp_path / "report"))
    _same_trace(loaded.trace, trace)
    for name in ("samples", "steps", "seconds", "peak_flops_per_s", "system_name", "kind", "extra"):
        assert getattr(loaded, name) == getattr(report, name), name
    pd.testing.assert_frame_equal(loaded.utilisation, report.utilisation)


#: One record a user (or a tool) adds by hand: IPU (host -1) and track, name, phase, times, counts.
_record = st.one_of(
    st.tuples(st.just(-1), st.sampled_from(["host", "host-io"])),
    st.tuples(st.integers(0, 5), st.sampled_from(["compute", "exchange", "sync", "link"])),
).flatmap(
    lambda where: st.fixed_dictionaries(
        {
            "ipu": st.just(where[0]),
            "track": st.just(where[1]),
            # NumPy's unicode arrays drop trailing NULs, so names never end with one.
            "name": st.text(st.characters(blacklist_characters="\x00"), max_size=6),
            "start_ps": st.integers(0, 10**15),
            "length": st.integers(0, 10**9),
            "layer": st.sampled_from(["", "dense", "NA", "ü"]),
            "phase": st.sampled_from(["", "fwd", "bwd", "io", "host"]),
            "step": st.integers(-1, 50),
            "micro_batch": st.integers(-1, 8),
            "bytes": st.integers(0, 2**40),
            "flops": st.integers(0, 2**50),
        }
    )
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=st.lists(_record, max_size=12))
def test_traces_of_records_round_trip(tmp_path, records) -> None:
    recorder = TraceRecorder()
    for r in records:
        fields = {k: v for k, v in r.items() if k not in ("ipu", "track", "name", "length")}
        start = fields.pop("start_ps")
        recorder.add(r["ipu"], r["track"], r["name"], start, start + r["length"], **fields)
    trace = recorder.freeze()
    _same_trace(Trace.load(trace.save(tmp_path / "t.npz")), trace)
    for column in ("name", "layer", "bytes", "flops", "step", "start_ps"):  # against the input
        assert sorted(trace[column].tolist()) == sorted(r[column] for r in records)


def _fit(tmp_path, **settings_) -> Report:
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    for key, value in settings_.items():
        setattr(cfg.ipusim, key, value)
    cfg.configure_ipu_system()
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=(64, 8)).astype(np.float32), rng.integers(0, 4, 64).astype(np.int32)
    with ipusim.IPUStrategy().scope():
        model = keras.Sequential([keras.layers.Dense(4)])
        model.compile(
            optimizer="sgd",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=2,
        )
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return model.last_simulation


def test_the_report_of_a_real_fit_round_trips(tmp_path) -> None:
    report = _fit(tmp_path)
    loaded = Report.load(report.save(tmp_path / "run"))
    _same_trace(loaded.trace, report.trace)
    for name in ("samples", "steps", "seconds", "peak_flops_per_s", "system_name", "kind", "extra"):
        assert getattr(loaded, name) == getattr(report, name), name
    for table in ("memory", "memory_items", "liveness", "utilisation"):
        pd.testing.assert_frame_equal(getattr(loaded, table), getattr(report, table))


# ---------------------------------------------------------------------------------- writers
def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_report_save_on_a_full_disk_leaves_no_folder(tmp_path, monkeypatch) -> None:
    report = Report(Trace.empty(), samples=0, steps=0, seconds=0.0)
    monkeypatch.setattr(_files.os, "fsync", _no_space)  # the disk fills while writing
    with pytest.raises(DiskWriteError, match=r"cannot write '.*run': the disk is full"):
        report.save(tmp_path / "run")
    assert os.listdir(tmp_path) == []  # no empty folder, no folder written aside
    monkeypatch.undo()
    report.save(tmp_path / "run")
    assert sorted(os.listdir(tmp_path / "run")) == sorted(
        ["trace.json", "trace.npz", "utilisation.csv", "memory.csv", "memory_items.csv"]
        + ["liveness.csv", "tiles.csv", "summary.txt", "report.json"]
    )  # Report.save's files, all of them and nothing aside


def test_trace_save_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch) -> None:
    path = Trace.empty().save(tmp_path / "t.npz")
    before = path.read_bytes()
    monkeypatch.setattr(_files.os, "replace", _no_space)
    with pytest.raises(DiskWriteError, match="the disk is full"):
        Trace.empty().save(path)
    assert os.listdir(tmp_path) == ["t.npz"] and path.read_bytes() == before


def test_save_img_is_atomic(tmp_path, monkeypatch) -> None:
    from ipusim.keras.preprocessing.image import load_img, save_img

    path = tmp_path / "x.png"
    save_img(path, np.zeros((4, 4, 3)))
    before = path.read_bytes()
    monkeypatch.setattr(_files.os, "fsync", _no_space)
    with pytest.raises(DiskWriteError, match="x.png'"):
        save_img(path, np.ones((4, 4, 3)))
    assert os.listdir(tmp_path) == ["x.png"] and path.read_bytes() == before
    assert load_img(path).size == (4, 4)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root writes into read-only folders, so chmod cannot make one",
)
def test_read_only_folders(tmp_path, capsys) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(DiskWriteError, match="permission denied"):
            Report(Trace.empty(), samples=0, steps=0, seconds=0.0).save(folder / "run")
        (tmp_path / "study.toml").write_text(_STUDY)
        assert cli_main(["sweep", str(tmp_path / "study.toml"), "-o", str(folder / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "permission denied" in err[0] and "bug" not in err[0]
    finally:
        folder.chmod(0o755)


_STUDY = 'workload = "_workloads:toy"\n[grid]\na = [0, 1]\nb = [0]\n'


def test_sweep_on_a_full_disk_prints_one_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "sweep"))
    (tmp_path / "study.toml").write_text(_STUDY)
    monkeypatch.setattr(_files.os, "fsync", _no_space)
    args = ["sweep", str(tmp_path / "study.toml"), "-o", str(tmp_path / "o"), "-j", "1"]
    assert cli_main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the disk is full" in err[0] and "bug in ipusim" not in err[0]
    assert err[0].startswith("ipusim sweep: error: cannot write ") and "[Errno" not in err[0]
    assert not [p for p in (tmp_path / "o").rglob("*.tmp")]


def test_sweep_on_a_read_only_file_system_prints_one_line(tmp_path, monkeypatch, capsys) -> None:
    """Works as root too: the file system's refusal is simulated (EROFS from mkdir)."""
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "sweep"))
    (tmp_path / "study.toml").write_text(_STUDY)

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only)
    args = ["sweep", str(tmp_path / "study.toml"), "-o", str(tmp_path / "o"), "--no-progress"]
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the file system is read-only" in err[0] and "bug" not in err[0]
    assert str(tmp_path / "o") in err[0]


def test_a_sweep_removes_temporary_files_left_in_its_folder(tmp_path) -> None:
    strays = [
        tmp_path / "configs" / ".0123456789abcdef.json.a1b2c3.tmp",
        tmp_path / ".results.csv.d4e5f6.tmp",
    ]
    (tmp_path / "configs").mkdir()
    for path in strays:
        path.write_text("half")
    with claim_output(tmp_path):
        assert not any(p.exists() for p in strays)


# ---------------------------------------------------------------------------------- time
def test_runs_beyond_simulated_time_are_rejected_naming_the_setting(tmp_path) -> None:
    program = _program(1, 1, 1)
    hour = 3600 * 10**12
    executions = MAX_RUN_PS // hour + 1  # one more hour-long overhead than time holds
    with pytest.raises(ConfigurationError, match="host_overhead_s"):
        simulate(program, RunPlan((1,) * executions), HostOptions(per_execution_overhead_ps=hour))
    with pytest.raises(ConfigurationError, match="host_dataset_rate"):
        simulate(program, RunPlan((10**6,)), HostOptions(sample_ps=10**15))
    with pytest.raises(ConfigurationError, match="host_overhead_s"):
        _fit(tmp_path, host_overhead_s=1e7)  # 116 days per execution
    with pytest.raises(ConfigurationError, match="host_dataset_rate"):
        _fit(tmp_path, host_dataset_rate=1e-4)
    with pytest.raises(HardwareSpecError, match="ipu.clock_hz"):
        load_system("IPU", {"ipu.clock": "1Hz"})


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_the_longest_runs_that_fit_work(engine) -> None:
    program = _program(2, 4, 2)
    overhead = MAX_RUN_PS // 4  # executions of a quarter of simulated time each
    options = HostOptions(per_execution_overhead_ps=overhead)
    result = simulate(program, RunPlan((4,) * 3), options, engine=engine)
    # Each execution waits for its overhead, then runs the short device step.
    assert 3 * overhead < result.end_ps < MAX_RUN_PS
    assert result.trace.end_ps == result.end_ps
    assert all(np.diff(result.execution_end_ps) > overhead)
    # One more execution passes the limit by its device time: rejected when the run ends.
    with pytest.raises(ConfigurationError, match="lasts beyond the longest run"):
        simulate(program, RunPlan((4,) * 4), options, engine=engine)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_series_of_calls_beyond_simulated_time_is_rejected() -> None:
    from ipusim.trace.calls import CallSeries

    program = _program(1, 1, 1)
    overhead = MAX_RUN_PS // 3
    result = simulate(program, RunPlan((1,)), HostOptions(per_execution_overhead_ps=overhead))
    call = Report(result.trace, samples=2, steps=1, seconds=result.end_ps / 1e12)
    series = CallSeries(call, record_budget=100)
    series.add(call)  # two calls: two thirds of simulated time
    assert series.report().trace.end_ps == 2 * result.end_ps
    with pytest.raises(ConfigurationError, match="call 3 of this program ends"):
        series.add(call)  # a third: past the limit by the device time
    assert len(series) == 2  # nothing of the rejected call was added
