"""run_sweep: rows in study order, result files, out-of-memory and error rows, resuming."""

from __future__ import annotations

import io
import json
import sys

import pandas as pd
import pytest
from _workloads import toy_figures

from ipusim.sweep import (
    Study,
    SweepError,
    config_key,
    load_results,
    result_path,
    run_sweep,
)

TOY = "_workloads:toy"


def _grid(a: int, b: int) -> dict:
    return {"workload": TOY, "grid": {"a": list(range(a)), "b": list(range(b))}}


def _expected(configs: list[dict]) -> pd.DataFrame:
    """The toy sweep's table, built from the hand-computed figures."""
    rows = [
        {
            **config,
            **toy_figures(config["a"], config["b"]),
            "oom": False,
            "oom_reason": "",
            "error": "",
            "config_key": config_key(config),
        }
        for config in configs
    ]
    return pd.DataFrame(rows)


def _markers(folder) -> list[str]:
    return sorted(p.name.split(".")[0] for p in folder.iterdir())


def test_rows_follow_the_study_and_results_are_stored_per_config(tmp_path, markers) -> None:
    study = Study.from_dict(_grid(3, 2))
    frame = run_sweep(study, tmp_path / "out", jobs=1, progress=False)
    pd.testing.assert_frame_equal(frame, _expected(list(study.configs)), check_exact=True)
    for config in study.configs:
        record = json.loads(result_path(tmp_path / "out", config_key(config)).read_text())
        assert record["config"] == config and record["workload"] == TOY
        assert record["row"] == toy_figures(config["a"], config["b"])
        assert record["key"] == config_key(config) and record["error"] == ""
    assert len(_markers(markers)) == 6


def test_second_run_reads_results_and_computes_nothing(tmp_path, markers) -> None:
    first = run_sweep(_grid(2, 2), tmp_path / "out", jobs=1, progress=False)
    before = _markers(markers)
    second = run_sweep(_grid(2, 2), tmp_path / "out", jobs=1, progress=False)
    assert _markers(markers) == before
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    # A bigger grid over the same folder computes only the new configurations.
    run_sweep(_grid(3, 2), tmp_path / "out", jobs=1, progress=False)
    new = sorted(set(_markers(markers)) - set(before))
    assert _markers(markers) == sorted(before + ["a2_b0", "a2_b1"]) and new == ["a2_b0", "a2_b1"]
    run_sweep(_grid(2, 2), tmp_path / "out", jobs=1, progress=False, resume=False)
    assert len(_markers(markers)) == 6 + 4


def test_local_pool_gives_the_same_table_as_serial(tmp_path, markers) -> None:
    serial = run_sweep(_grid(4, 3), tmp_path / "serial", jobs=1, progress=False)
    pooled = run_sweep(_grid(4, 3), tmp_path / "pooled", jobs=2, progress=False)
    pd.testing.assert_frame_equal(serial, pooled, check_exact=True)
    assert len(_markers(markers)) == 24


def test_out_of_memory_and_errors_become_rows_and_the_sweep_goes_on(tmp_path, markers) -> None:
    study = Study.from_dict(
        {"workload": "_workloads:toy_faulty", "grid": {"a": [0, 1, 2, 3]}, "fixed": {"b": 1}}
    )
    frame = run_sweep(study, tmp_path / "out", jobs=1, progress=False)
    assert frame["oom"].tolist() == [False, True, False, False]
    assert frame["oom_reason"].tolist() == ["", "Out of memory on IPU 0: toy a=1", "", ""]
    assert frame["error"].tolist() == ["", "", "ZeroDivisionError: division by zero", ""]
    assert frame["throughput"].tolist()[0] == 1 and frame["throughput"].tolist()[3] == 31
    assert frame["throughput"].isna().tolist() == [False, True, True, False]
    record = json.loads(result_path(tmp_path / "out", config_key(study.configs[2])).read_text())
    assert "Traceback" in record["traceback"] and "1 / 0" in record["traceback"]
    # Resuming runs the failed configuration again, not the out-of-memory one.
    assert _markers(markers) == ["a0_b1", "a3_b1"]
    before = len(list(markers.iterdir()))
    run_sweep(study, tmp_path / "out", jobs=1, progress=False)
    assert len(list(markers.iterdir())) == before  # toy_faulty reaches toy() only for a = 0, 3
    stored = load_results(study, tmp_path / "out")
    assert sorted(stored) == [0, 1, 2, 3] and stored[2]["error"].startswith("ZeroDivisionError")


def test_a_figure_named_like_a_config_key_is_an_error_row(tmp_path) -> None:
    frame = run_sweep(
        [{"a": 0}], tmp_path / "out", jobs=1, progress=False, workload="_workloads:clashing"
    )
    assert "also a configuration key" in frame.loc[0, "error"]


def test_list_of_configs_needs_a_workload(tmp_path) -> None:
    with pytest.raises(SweepError, match="needs workload="):
        run_sweep([{"a": 0, "b": 0}], tmp_path / "out")


def test_a_lambda_cannot_go_to_a_process_pool(tmp_path) -> None:
    configs = [{"a": 0}, {"a": 1}]
    with pytest.raises(SweepError, match="cannot be sent to worker processes"):
        run_sweep(configs, tmp_path / "out", jobs=2, workload=lambda c: {"x": c["a"]})
    frame = run_sweep(
        configs, tmp_path / "serial", jobs=1, workload=lambda c: {"x": c["a"]}, progress=False
    )
    assert frame["x"].tolist() == [0, 1]


def test_results_of_another_workload_or_config_are_refused(tmp_path) -> None:
    run_sweep(_grid(1, 2), tmp_path / "out", jobs=1, progress=False)
    with pytest.raises(SweepError, match="another output folder, or resume=False"):
        run_sweep(
            _grid(1, 2), tmp_path / "out", jobs=1, progress=False, workload="_workloads:toy_faulty"
        )
    path = result_path(tmp_path / "out", config_key({"a": 0, "b": 1}))
    record = json.loads(path.read_text())
    record["config"] = {"a": 9, "b": 9}  # what a key collision would look like
    path.write_text(json.dumps(record))
    with pytest.raises(SweepError, match="although both have key"):
        run_sweep(_grid(1, 2), tmp_path / "out", jobs=1, progress=False)


def test_unreadable_result_files_are_recomputed(tmp_path, markers) -> None:
    run_sweep(_grid(1, 2), tmp_path / "out", jobs=1, progress=False)
    result_path(tmp_path / "out", config_key({"a": 0, "b": 0})).write_text("{not json")
    stream = io.StringIO()
    frame = run_sweep(_grid(1, 2), tmp_path / "out", jobs=1, stream=stream)
    assert _markers(markers) == ["a0_b0", "a0_b0", "a0_b1"]
    pd.testing.assert_frame_equal(frame, _expected([{"a": 0, "b": 0}, {"a": 0, "b": 1}]))
    text = stream.getvalue()
    assert "2 configurations, 1 already in" in text and "[2/2] a=0 b=0: done" in text


def test_invalid_jobs_and_output(tmp_path) -> None:
    with pytest.raises(SweepError, match="jobs must be a positive int"):
        run_sweep(_grid(1, 1), tmp_path / "out", jobs=0)
    (tmp_path / "file").write_text("")
    with pytest.raises(SweepError, match="not a folder"):
        run_sweep(_grid(1, 1), tmp_path / "file", jobs=1)


def test_dask_scheduler_without_distributed_says_what_to_install(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed → ImportError
    with pytest.raises(SweepError, match=r"needs the `distributed` package.*pip install"):
        run_sweep(_grid(1, 1), tmp_path / "out", scheduler="tcp://127.0.0.1:1", progress=False)
