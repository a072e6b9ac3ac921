"""Damaged files: byte flips, truncations and field edits of every file kind ipusim reads raise
an IPUSimError subclass (naming the file), never a bare built-in error (issue 24, item 2).

File kinds: a trace (.npz), a report folder (report.json, the CSV tables, trace.npz), a hardware
system file (TOML), a sweep study (TOML), MNIST (.npz and IDX, gzipped or not) and a
keras.datasets cache file (.npz). Each test starts from a valid file written by ipusim (or
built as Keras writes it), damages it as hypothesis draws, and loads it: the load either
succeeds (a flip may hit a byte nobody reads, such as a zip member's timestamp) or raises an
IPUSimError.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipusim.data import mnist
from ipusim.data.datasets import _plain_pickle
from ipusim.errors import IPUSimError
from ipusim.hardware import load_system
from ipusim.lowering.program import IPUMemoryPlan, MemoryItem
from ipusim.sweep.runner import result_path, run_sweep
from ipusim.sweep.study import Study, config_key
from ipusim.trace import HOST, Report, Trace, TraceRecorder

#: Examples per file kind (IPUSIM_FILE_EXAMPLES=10000 for the long run).
FUZZ = settings(
    max_examples=int(os.environ.get("IPUSIM_FILE_EXAMPLES", "60")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: A damage: ("flip", position fraction, xor mask) or ("cut", length fraction).
damages = st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.floats(0, 1), st.just(0)),
)


def _damage(data: bytes, damage: tuple[str, float, int]) -> bytes:
    kind, where, mask = damage
    at = min(int(where * len(data)), len(data) - 1)
    if kind == "cut":
        return data[:at]
    return data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :]


def _loads_or_ipusim_error(load, *args) -> None:
    with contextlib.suppress(IPUSimError):
        load(*args)


def _trace() -> Trace:
    r = TraceRecorder()
    r.add(HOST, "host-io", "infeed", 0, 100_000, phase="io", bytes=4096)
    r.add(0, "compute", "d/matmul", 100_000, 600_000, layer="d", phase="fwd", step=0, flops=99)
    r.add(0, "exchange", "d/exchange", 600_000, 850_000, layer="d", phase="fwd", step=0)
    r.add(1, "sync", "d/sync", 850_000, 1_000_000, phase="fwd", step=0)
    return r.freeze()


@pytest.fixture(scope="module")
def trace_bytes() -> bytes:
    return _trace().to_npz_bytes()


@FUZZ
@given(damage=damages)
def test_damaged_trace_files(tmp_path, trace_bytes, damage) -> None:
    path = tmp_path / "t.npz"
    path.write_bytes(_damage(trace_bytes, damage))
    _loads_or_ipusim_error(Trace.load, path)


def _npz_members(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return {k: archive[k] for k in archive.files}


#: Field edits of a trace: (member, new value) drawn per member's kind.
_EDITS = st.sampled_from(
    [
        ("i_end_ps", lambda a: a - 10**9),  # records end before they start
        ("i_start_ps", lambda a: a - 10**9),  # records start before the run
        ("c_count", lambda a: -a - 1),  # negative counters
        ("c_stretch_ps", lambda a: a - 1),
        ("c_waiting_ps", lambda a: a - 5),
        ("t_rec_bytes", lambda a: -a - 1),
        ("t_rec_rel_end", lambda a: a + 10**7),
        ("t_duration_ps", lambda a: a * 0 - 3),
        ("i_template", lambda a: a + 1000),
        ("i_ipu", lambda a: a - 7),
        ("c_slots", lambda a: a[::-1]),
        ("t_ptr", lambda a: a * 2),
        ("execution_end_ps", lambda a: np.array([5, 1])),
        ("c_count", lambda a: a.astype(np.float64) + 0.5),
        ("i_step", lambda a: a.astype("<U3")),
        ("t_label", lambda a: a + 10**6),
        ("__meta__", lambda a: np.array('{"end_ps": -1}')),
        ("__meta__", lambda a: np.array("not json")),
        ("__version__", lambda a: np.array("two")),
        ("t_names", lambda a: np.arange(3)),
    ]
)


@FUZZ
@given(edit=_EDITS)
def test_edited_trace_fields(tmp_path, trace_bytes, edit) -> None:
    member, change = edit
    arrays = _npz_members(trace_bytes)
    arrays[member] = change(arrays[member])
    path = tmp_path / "t.npz"
    np.savez(path, **arrays)
    # Every edit above breaks a rule of the format, so the load must say so.
    with pytest.raises(IPUSimError):
        Trace.load(path)


def test_the_error_names_the_file_and_the_field(tmp_path, trace_bytes) -> None:
    arrays = _npz_members(trace_bytes)
    arrays["i_end_ps"] = arrays["i_start_ps"] - 1
    np.savez(tmp_path / "t.npz", **arrays)
    with pytest.raises(IPUSimError, match=r"t\.npz.*i_start_ps / i_end_ps.*save the trace again"):
        Trace.load(tmp_path / "t.npz")
    arrays = _npz_members(trace_bytes)
    arrays["c_count"] = -arrays["c_count"] - 1
    np.savez(tmp_path / "t.npz", **arrays)
    with pytest.raises(IPUSimError, match=r"c_count: counters must be >= 0"):
        Trace.load(tmp_path / "t.npz")


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory) -> Path:
    plan = IPUMemoryPlan(0, (MemoryItem("d/kernel", "weights", 4096),), budget_bytes=1 << 20)
    report = Report(
        _trace(), samples=8, steps=2, seconds=2e-6, memory_plans=(plan,), peak_flops_per_s={0: 1e12}
    )
    return report.save(tmp_path_factory.mktemp("report") / "run")


@FUZZ
@given(
    name=st.sampled_from(["report.json", "memory.csv", "trace.npz", "utilisation.csv"]),
    damage=damages,
)
def test_damaged_report_folders(tmp_path, report_folder, name, damage) -> None:
    folder = tmp_path / "run"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(report_folder, folder)
    (folder / name).write_bytes(_damage((folder / name).read_bytes(), damage))
    _loads_or_ipusim_error(Report.load, folder)


@FUZZ
@given(
    key=st.sampled_from(["samples", "steps", "seconds", "peak_flops_per_s", "kind", "extra"]),
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.floats(), max_size=2),
    ),
)
def test_edited_report_figures(tmp_path, report_folder, key, value) -> None:
    folder = tmp_path / "run"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(report_folder, folder)
    figures = json.loads((folder / "report.json").read_text())
    figures[key] = value
    (folder / "report.json").write_text(json.dumps(figures))
    _loads_or_ipusim_error(Report.load, folder)


def test_negative_figures_are_rejected(tmp_path, report_folder) -> None:
    folder = tmp_path / "run"
    shutil.copytree(report_folder, folder)
    figures = json.loads((folder / "report.json").read_text())
    figures["samples"] = -8
    (folder / "report.json").write_text(json.dumps(figures))
    with pytest.raises(IPUSimError, match=r"report\.json.*samples: expected an integer >= 0"):
        Report.load(folder)
    shutil.copy(report_folder / "report.json", folder / "report.json")
    text = (folder / "memory.csv").read_text().splitlines()
    text[1] = "0,-4096," + text[1].split(",", 2)[2]  # weights_bytes
    (folder / "memory.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(IPUSimError, match=r"memory\.csv.*below 0"):
        Report.load(folder)


HARDWARE = 'base = "M2000"\nname = "mine"\n[ipu]\nclock = "1.4GHz"\ntiles = 1472\n[host]\nlatency = "2us"\n'


@FUZZ
@given(damage=damages)
def test_damaged_hardware_files(tmp_path, damage) -> None:
    path = tmp_path / "system.toml"
    path.write_bytes(_damage(HARDWARE.encode(), damage))
    _loads_or_ipusim_error(load_system, path)


@FUZZ
@given(
    field=st.sampled_from(
        ["ipu.tiles", "ipu.clock", "host.latency", "num_ipus", "ipu.sram_per_tile"]
    ),
    value=st.one_of(
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=True),
        st.sampled_from(["1e30GHz", "1Hz", "-3us", "1 PiB", "fast", "1e9", "12"]),
        st.booleans(),
    ),
)
def test_edited_hardware_fields(tmp_path, field, value) -> None:
    section, _, key = field.rpartition(".")
    body = (
        f"{key} = {json.dumps(value)}"
        if not isinstance(value, float) or np.isfinite(value)
        else f"{key} = nan"
    )
    text = 'base = "M2000"\n' + (f"[{section}]\n" if section else "") + body + "\n"
    path = tmp_path / "system.toml"
    path.write_text(text)
    _loads_or_ipusim_error(load_system, path)


def test_a_billion_tiles_is_rejected_with_the_field_and_the_range(tmp_path) -> None:
    path = tmp_path / "big.toml"
    path.write_text('base = "M2000"\n[ipu]\ntiles = 1000000000\n')
    with pytest.raises(
        IPUSimError, match=r"big\.toml: ipu\.tiles = 1e\+09 is outside.*\[1, 94208\]"
    ):
        load_system(path)


STUDY = 'workload = "mlp_timing"\n[fixed]\nbatch_size = 32\n[grid]\nreplicas = [1, 2]\n'


@FUZZ
@given(damage=damages)
def test_damaged_sweep_studies(tmp_path, damage) -> None:
    path = tmp_path / "study.toml"
    path.write_bytes(_damage(STUDY.encode(), damage))
    _loads_or_ipusim_error(Study.from_toml, path)


@FUZZ
@given(
    line=st.sampled_from(
        [
            "workload = {v}",
            "[fixed]\nbatch_size = {v}",
            "[grid]\nreplicas = {v}",
            "[grid]\nreplicas = [{v}, {v}]",
            "[[configs]]\nreplicas = {v}",
            "name = {v}",
        ]
    ),
    value=st.sampled_from(
        ['"mlp_timing"', '"nope:nothing"', "1", "-3", "[]", "{}", "1e400", "nan", '"x"', "true"]
    ),
)
def test_edited_sweep_studies(tmp_path, line, value) -> None:
    path = tmp_path / "study.toml"
    head = "" if line.startswith("workload") else 'workload = "mlp_timing"\n'
    path.write_text(head + line.format(v=value) + "\n")
    _loads_or_ipusim_error(Study.from_toml, path)


def test_a_huge_grid_is_rejected_before_it_is_built(tmp_path) -> None:
    path = tmp_path / "study.toml"
    axes = "\n".join(f"k{i} = {list(range(100))}" for i in range(4))  # 10**8 configurations
    path.write_text(f'workload = "mlp_timing"\n[grid]\n{axes}\n')
    with pytest.raises(IPUSimError, match=r"makes 100,000,000 configurations"):
        Study.from_toml(path)


def _mnist_npz(n: int = 6) -> bytes:
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        x_train=rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, n, dtype=np.uint8),
        x_test=rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, 2, dtype=np.uint8),
    )
    return buffer.getvalue()


def _idx(kind: str, n: int = 4) -> bytes:
    rng = np.random.default_rng(1)
    if kind == "images":
        return (
            struct.pack(">IIII", 2051, n, 28, 28)
            + rng.integers(0, 256, n * 784).astype(np.uint8).tobytes()
        )
    return struct.pack(">II", 2049, n) + rng.integers(0, 10, n).astype(np.uint8).tobytes()


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv(mnist.ENV_VAR, str(folder))
    monkeypatch.setattr(mnist, "KERAS_DATASETS_DIR", str(tmp_path / "nowhere"))
    mnist._CACHE.clear()
    return folder


@FUZZ
@given(damage=damages)
def test_damaged_mnist_npz(data_dir, damage) -> None:
    (data_dir / "mnist.npz").write_bytes(_damage(_mnist_npz(), damage))
    mnist._CACHE.clear()
    _loads_or_ipusim_error(mnist.load_data, "mnist.npz", None, False)


@FUZZ
@given(
    member=st.sampled_from(["images", "labels"]),
    zipped=st.booleans(),
    damage=damages,
)
def test_damaged_mnist_idx(data_dir, member, zipped, damage) -> None:
    for path in data_dir.iterdir():
        path.unlink()
    for name, kind in (("t10k-images-idx3-ubyte", "images"), ("t10k-labels-idx1-ubyte", "labels")):
        data = _idx(kind)
        if zipped:
            data = gzip.compress(data, mtime=0)
        if kind == member:
            data = _damage(data, damage)
        (data_dir / (name + (".gz" if zipped else ""))).write_bytes(data)
    mnist._CACHE.clear()
    _loads_or_ipusim_error(mnist.load_data, "mnist.npz", "test", False)


@FUZZ
@given(
    key=st.sampled_from(["x_train", "y_train", "x_test", "y_test"]),
    value=st.sampled_from(
        [
            np.full((6, 28, 28), 300, np.int64),
            np.full((6,), 12, np.uint8),
            np.full((6,), -1, np.int8),
            np.zeros((6, 28), np.uint8),
            np.array(["a"] * 6),
            np.full((6,), np.nan),
        ]
    ),
)
def test_edited_mnist_arrays(data_dir, key, value) -> None:
    arrays = _npz_members(_mnist_npz())
    arrays[key] = value
    np.savez(data_dir / "mnist.npz", **arrays)
    mnist._CACHE.clear()
    with pytest.raises(IPUSimError, match="mnist.npz"):
        mnist.load_data("mnist.npz", None, False)


def _keras_npz(objects: bool) -> bytes:
    """A Keras cache file: plain arrays (boston_housing) or lists of word ids (imdb, pickled)."""
    buffer = io.BytesIO()
    if objects:
        x = np.empty(3, dtype=object)
        x[:] = [[1, 14, 22], [1, 5], [1, 7, 9, 4]]
        np.savez(buffer, x=x, y=np.array([0, 1, 1]))
    else:
        np.savez(buffer, x=np.arange(12.0).reshape(3, 4), y=np.arange(3.0))
    return buffer.getvalue()


@FUZZ
@given(objects=st.booleans(), damage=damages)
def test_damaged_keras_dataset_npz(tmp_path, objects, damage) -> None:
    path = tmp_path / "imdb.npz"
    path.write_bytes(_damage(_keras_npz(objects), damage))
    _loads_or_ipusim_error(_plain_pickle.read_npz, path, ("x", "y"))


def _toy(config: dict) -> dict:
    return {"throughput": config["a"] * 10.0}


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sweep") / "out"
    run_sweep([{"a": 1}, {"a": 2}], folder, jobs=1, progress=False, workload=_toy)
    return folder


@FUZZ
@given(
    damage=st.one_of(
        damages.map(lambda d: ("bytes", d)),
        st.tuples(
            st.just("field"),
            st.tuples(
                st.sampled_from(["key", "config", "row", "oom", "error", "workload", "version"]),
                st.sampled_from([None, 3, "x", [1], {"a": [1]}, {"throughput": {}}, True]),
            ),
        ),
    )
)
def test_damaged_sweep_results_rerun_or_raise(tmp_path, sweep_folder, damage, capsys) -> None:
    folder = tmp_path / "out"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(sweep_folder, folder)
    path = result_path(folder, config_key({"a": 1}))  # a = 2's result stays intact
    kind, what = damage
    if kind == "bytes":
        path.write_bytes(_damage(path.read_bytes(), what))
    else:
        record = json.loads(path.read_text())
        record[what[0]] = what[1]
        path.write_text(json.dumps(record))
        if what[0] in ("key", "config", "row", "oom", "error") and what[1] is None:
            frame = run_sweep([{"a": 1}, {"a": 2}], folder, jobs=1, progress=False, workload=_toy)
            assert frame["throughput"].tolist() == [10.0, 20.0]  # ignored and run again
            assert "ignoring damaged result file" in capsys.readouterr().err
            return
    try:
        frame = run_sweep([{"a": 1}, {"a": 2}], folder, jobs=1, progress=False, workload=_toy)
    except IPUSimError:
        return
    # A damaged result is ignored (with a note) and its configuration runs again; a flip that
    # leaves a valid record (a digit of a figure) is read as written. The other one is intact.
    assert len(frame) == 2 and frame["throughput"].tolist()[1] == 20.0
