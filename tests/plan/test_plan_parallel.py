"""The planner's finalists on worker processes: the same figures as in this process, and the
same table every time for the same ``jobs``."""

from __future__ import annotations

import pandas as pd
import pytest

import ipusim
from ipusim.errors import ConfigurationError

MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}


def _plan(jobs: int):
    return ipusim.plan("bert", "M2000", 64, MODEL, candidates=4, jobs=jobs, progress=False).table


def test_two_processes_measure_what_one_does():
    serial, parallel, again = _plan(1), _plan(2), _plan(2)
    assert list(parallel["summary"]) == list(again["summary"])
    assert list(parallel["throughput"]) == list(again["throughput"])
    by_summary = dict(zip(serial["summary"], serial["throughput"]))
    shared = [s for s in parallel["summary"] if s in by_summary]
    assert shared  # both simulated the first finalists
    for summary, throughput in zip(parallel["summary"], parallel["throughput"]):
        if summary in by_summary:
            assert throughput == by_summary[summary]


def test_jobs_must_be_positive():
    with pytest.raises(ConfigurationError, match="jobs must be a positive int"):
        ipusim.plan("bert", "M2000", 64, MODEL, candidates=1, jobs=0, progress=False)


def test_a_dask_cluster_measures_what_worker_processes_do():
    distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        on_dask = ipusim.plan(
            "bert",
            "M2000",
            64,
            MODEL,
            candidates=4,
            jobs=2,
            scheduler=cluster.scheduler_address,
            progress=False,
        ).table
    on_pool = _plan(2)
    assert list(on_dask["summary"]) == list(on_pool["summary"])
    assert list(on_dask["throughput"]) == list(on_pool["throughput"])


def test_two_processes_give_the_serial_table(capsys):
    """The batches' rows are replayed in candidate order under the serial rules."""
    kw = dict(budget_s=1e9, candidates=5, seed=3)
    serial = ipusim.plan("bert", "M2000", 64, MODEL, progress=False, **kw)
    assert capsys.readouterr().err == ""  # progress=False is quiet
    parallel = ipusim.plan("bert", "M2000", 64, MODEL, jobs=2, **kw)
    cols = [c for c in serial.table.columns if c != "args"]
    pd.testing.assert_frame_equal(serial.table[cols], parallel.table[cols])
    err = capsys.readouterr().err
    assert f"{serial.estimated} candidates estimated" in err
    assert "best so far" in err and "s left" in err
