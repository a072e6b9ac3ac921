"""The output folder and the checks before a sweep starts: misspelt keys stop it before any
configuration runs, stray temporary files are removed, and one sweep at a time writes a folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _processes import read_line

from ipusim.sweep import Study, SweepError, config_key, run_sweep
from ipusim.sweep.cli import main
from ipusim.sweep.outdir import LOCK_NAME, claim_output, stray_temporary_files

TOY = "_workloads:toy"


def test_a_misspelt_mlp_timing_key_stops_the_sweep_before_anything_runs(tmp_path, capsys) -> None:
    study = tmp_path / "study.toml"
    study.write_text('workload = "mlp_timing"\n[grid]\nbatchsize = [16, 32]\n[fixed]\nipus = 1\n')
    out = tmp_path / "out"
    assert main([str(study), "-o", str(out), "-j", "2", "--format", "csv"]) == 2
    err = capsys.readouterr().err
    assert "2 of 2 configurations cannot run workload 'mlp_timing', so none was run" in err
    assert "every configuration: mlp_timing: unknown configuration key(s) ['batchsize']" in err
    assert "Did you mean 'batchsize' -> 'batch_size'?" in err
    assert not out.exists()  # nothing was created


def test_a_workload_check_names_the_bad_configurations_and_nothing_runs(tmp_path, markers) -> None:
    configs = [{"a": 0, "b": 0}, {"a": 1, "b": "x"}, {"a": 2, "b": 0, "c": 1}, {"a": 3, "b": 1}]
    with pytest.raises(SweepError) as caught:
        run_sweep(configs, tmp_path / "out", jobs=1, workload="_workloads:toy_checked")
    text = str(caught.value)
    assert "2 of 4 configurations cannot run workload '_workloads:toy_checked'" in text
    assert "configs[1] (a = 1, b = 'x'): toy: b must be an int; got 'x'" in text
    assert "configs[2] (a = 2, b = 0, c = 1): toy reads exactly the keys a and b" in text
    assert list(markers.iterdir()) == []  # not even the valid configurations ran
    frame = run_sweep(
        [configs[0], configs[3]],
        tmp_path / "out",
        jobs=1,
        progress=False,
        workload="_workloads:toy_checked",
    )
    assert frame["throughput"].tolist() == [0, 31]


def _stray(folder: Path, prefix: str) -> Path:
    """A temporary file named as the atomic writer names them (what a killed write leaves)."""
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
    os.write(handle, b"half a file")
    os.close(handle)
    return Path(name)


def test_stray_temporary_files_of_killed_writes_are_removed(tmp_path, markers) -> None:
    out = tmp_path / "out"
    (out / "configs").mkdir(parents=True)
    key = config_key({"a": 0, "b": 0})
    strays = [
        _stray(out / "configs", f".{key}.json."),
        _stray(out / "configs", ".0123456789abcdef.json."),
        _stray(out, ".results.parquet."),
        _stray(out, ".results.csv."),
    ]
    keep = [out / "configs" / "notes.tmp", out / ".results.txt.x.tmp", out / "mine.json"]
    for path in keep:
        path.write_text("the user's")
    assert stray_temporary_files(out) == sorted(strays)
    frame = run_sweep(
        {"workload": TOY, "grid": {"a": [0], "b": [0, 1]}}, out, jobs=1, progress=False
    )
    assert frame["error"].tolist() == ["", ""]
    assert not any(path.exists() for path in strays)
    assert all(path.read_text() == "the user's" for path in keep)
    assert sorted(p.name for p in (out / "configs").iterdir()) == sorted(
        [f"{config_key({'a': 0, 'b': b})}.json" for b in (0, 1)] + ["notes.tmp"]
    )


def test_a_folder_another_sweep_is_writing_is_refused(tmp_path) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom ipusim.sweep.outdir import claim_output\n"
            f"with claim_output({str(out)!r}):\n    print('HOLDING', flush=True)\n"
            "    sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert read_line(holder, "for the other sweep to take the folder") == "HOLDING\n"
        with pytest.raises(SweepError, match=rf"another sweep \(process {holder.pid}\) is writing"):
            run_sweep({"workload": TOY, "grid": {"a": [0], "b": [0]}}, out, jobs=1)
    finally:
        holder.stdin.close()  # the holder ends; the kernel drops its lock
        holder.wait(60)
        holder.stdout.close()
    with claim_output(out):
        assert (out / LOCK_NAME).is_file()


def test_the_lock_is_not_inherited_by_the_workers(tmp_path, markers) -> None:
    # Two sweeps in a row on one folder with a kept pool: the workers forked during the first
    # must not keep the folder locked for the second.
    grid = {"workload": TOY, "grid": {"a": [0, 1], "b": [0, 1]}}
    run_sweep(grid, tmp_path / "out", jobs=2, progress=False)
    frame = run_sweep(grid, tmp_path / "out", jobs=2, progress=False, resume=False)
    assert frame["throughput"].tolist() == [0, 1, 10, 11]
    assert Study.from_dict(grid).config_keys() == frame["config_key"].tolist()
