"""Judging the finalists on two local processes gives the serial table, row for row."""

from __future__ import annotations

import pandas as pd
import pytest

from ipusim.plan.search import plan

MODEL = {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}


def test_two_processes_give_the_serial_table(capsys):
    kw = dict(budget_s=1e9, candidates=5, seed=3)
    serial = plan("bert", "M2000", 64, MODEL, progress=False, **kw)
    assert capsys.readouterr().err == ""  # progress=False is quiet
    parallel = plan("bert", "M2000", 64, MODEL, processes=2, **kw)
    assert serial.simulated == 5
    cols = [c for c in serial.table.columns if c != "args"]
    pd.testing.assert_frame_equal(serial.table[cols], parallel.table[cols])
    assert list(serial.table["args"]) == list(parallel.table["args"])
    err = capsys.readouterr().err
    assert f"{serial.estimated} candidates estimated" in err
    assert "finalist 5 " in err and "best so far" in err and "s left" in err


def test_a_dask_cluster_gives_the_serial_table():
    distributed = pytest.importorskip("distributed")
    kw = dict(budget_s=1e9, candidates=5, seed=3, progress=False)
    serial = plan("bert", "M2000", 64, MODEL, **kw)
    cols = [c for c in serial.table.columns if c != "args"]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster) as client:  # a Client is used and left open
            by_client = plan("bert", "M2000", 64, MODEL, dask=client, **kw)
            assert client.status == "running"
        by_address = plan("bert", "M2000", 64, MODEL, dask=cluster.scheduler_address, **kw)
    for got in (by_client, by_address):
        pd.testing.assert_frame_equal(serial.table[cols], got.table[cols])
