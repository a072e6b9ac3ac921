"""Sweeps on a real Dask cluster (a scheduler and two worker processes on 127.0.0.1).

The same studies run on the cluster and on the local process pool must give the same table,
value for value: the toy workload's figures are exact and the simulation is deterministic.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pandas as pd
import pytest
from _workloads import toy_figures

import ipusim.sweep.pools as pools
from ipusim.config._env import settings_restored
from ipusim.sweep import Study, SweepError, run_sweep

distributed = pytest.importorskip(
    "distributed",
    reason="Dask distributed is not installed (pip install 'dask[distributed]', ipusim's dask extra)",
)

HERE = Path(__file__).resolve().parent

TOY_CONFIGS = [{"a": a, "b": b} for a in range(8) for b in range(4)]
MLP_CONFIGS = [
    {"model": "mlp", "ipus": 1, "batch_size": 16},
    {"model": "mlp", "ipus": 2, "batch_size": 16},
    {"model": "mlp", "ipus": 1, "batch_size": 8, "gradient_accumulation": 2},
    {"model": "mlp", "ipus": 1, "batch_size": 262144, "system": "C2"},  # far too big: OOM
]
#: 32 toy configurations and 4 simulations of the seed MLP, in one study.
STUDY = Study.from_configs(
    "_workloads:mixed", TOY_CONFIGS + MLP_CONFIGS, fixed={"steps_per_execution": 2}
)
TOY = Study("_workloads:toy", tuple({"a": c["a"], "b": c["b"]} for c in TOY_CONFIGS))


@pytest.fixture(scope="module")
def markers(tmp_path_factory):
    """A folder where every toy call leaves a file (see _workloads), on the cluster too."""
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
def cluster(markers):
    # The workers are started with this environment: they import the test workloads by name
    # and record their calls in `markers`.
    with settings_restored(("PYTHONPATH", "SWEEP_TEST_MARKERS")):
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), path) if p)
        os.environ["SWEEP_TEST_MARKERS"] = str(markers)
        with distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local_cluster:
            yield local_cluster


def test_dask_cluster_gives_the_same_table_as_the_local_pool(cluster, tmp_path) -> None:
    address = cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    on_dask = run_sweep(STUDY, tmp_path / "dask", scheduler=address, progress=False)
    on_pool = run_sweep(STUDY, tmp_path / "local", jobs=2, progress=False)
    assert len(on_dask) == 36
    pd.testing.assert_frame_equal(on_dask, on_pool, check_exact=True)
    assert (on_dask["error"] == "").all(), on_dask["error"].tolist()
    toy, mlp = on_dask.iloc[:32], on_dask.iloc[32:]
    assert toy["throughput"].tolist() == [
        toy_figures(c["a"], c["b"])["throughput"] for c in TOY_CONFIGS
    ]
    assert mlp["oom"].tolist() == [False, False, False, True]
    assert "Out of memory on IPU 0" in mlp["oom_reason"].iloc[3]
    fits = mlp[~mlp["oom"]]
    assert (fits["throughput_samples_per_s"] > 0).all()
    # Samples per run: batch × steps_per_execution × replicas (one execution).
    assert fits["samples"].tolist() == [16 * 2, 16 * 2 * 2, 8 * 2]
    all_reduce = fits["exposed_all_reduce_s"].tolist()
    assert all_reduce[0] == 0.0 and all_reduce[1] > 0.0  # only the 2 replicas all-reduce
    # The scheduler had both workers.
    assert len(cluster.scheduler_info["workers"]) == 2


def test_dask_sweep_resumes_from_the_result_files(cluster, markers, tmp_path) -> None:
    out = tmp_path / "out"
    first = Study(TOY.workload, TOY.configs[:10])
    run_sweep(first, out, jobs=1, progress=False)
    before = {p.name for p in markers.iterdir()}
    frame = run_sweep(TOY, out, scheduler=cluster.scheduler_address, progress=False)
    assert frame["throughput"].tolist() == [c["a"] * 10 + c["b"] for c in TOY.configs]
    new = sorted(p.name.split(".")[0] for p in markers.iterdir() if p.name not in before)
    assert new == sorted(f"a{c['a']}_b{c['b']}" for c in TOY.configs[10:])


def test_unreachable_scheduler_is_explained(monkeypatch, tmp_path) -> None:
    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(pools, "DASK_CONNECT_TIMEOUT_S", 1)
    with pytest.raises(SweepError, match="cannot reach the Dask scheduler"):
        run_sweep(TOY, tmp_path / "out", scheduler=f"tcp://127.0.0.1:{port}", progress=False)
