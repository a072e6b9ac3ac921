"""report.top_ops() / ipusim report --top-ops and ipusim compare A B."""

from __future__ import annotations

import contextlib
import io

import pytest

from ipusim.cli import main as cli_main
from ipusim.trace.compare import compare_reports, format_comparison
from workloads import mnist_cnn

ARGV = "--timing-only --steps 20 --micro-batch 64 --optimizer sgd --system IPU"


def _run(spe: int):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return mnist_cnn.main(f"{ARGV} --steps-per-execution {spe}".split())


@pytest.fixture(scope="module")
def reports():
    return _run(1), _run(20)


def test_top_ops_add_up_to_the_ipus_compute_and_exchange_time(reports):
    """Every record is kept in this short run, so the compute sets' times over all of them are
    the utilisation report's compute and exchange seconds, and the table is largest first."""
    report = reports[0]
    every = report.top_ops(n=10_000)
    util = report.utilisation.set_index("ipu")
    assert every.compute_s.sum() == pytest.approx(util.compute_s[0], rel=1e-9)
    assert every.exchange_s.sum() == pytest.approx(util.exchange_s[0], rel=1e-9)
    top = report.top_ops(n=3)
    assert len(top) == 3 and list(top.compute_s) == sorted(top.compute_s, reverse=True)
    assert top.compute_s.iloc[0] == every.compute_s.max()
    by_exchange = report.top_ops(n=3, by="exchange")
    assert by_exchange.exchange_s.iloc[0] == every.exchange_s.max()


def test_top_ops_by_memory_are_the_largest_items(reports):
    items = reports[0].memory_items
    top = reports[0].top_ops(n=2, by="memory")
    assert list(top.bytes) == sorted(items.bytes, reverse=True)[:2]
    assert top.share.iloc[0] == pytest.approx(top.bytes.iloc[0] / items.bytes.sum())


@pytest.mark.parametrize(("by", "n"), [("flops", 3), ("time", 0)])
def test_top_ops_refuses_bad_arguments(reports, by, n):
    with pytest.raises(ValueError, match="by must be|n must be"):
        reports[0].top_ops(n=n, by=by)


def test_compare_names_the_differences(reports):
    a, b = reports
    result = compare_reports(a, b)
    ratio = b.throughput_samples_per_s / a.throughput_samples_per_s
    assert ratio > 1.5  # 20 steps per host round trip instead of 1
    assert f"throughput: B is {ratio:.2f}x A" in result.differences[0]
    changed = a.bottleneck.resource != b.bottleneck.resource
    named = [d for d in result.differences if d.startswith("bottleneck:")]
    assert bool(named) == changed, (a.bottleneck.resource, b.bottleneck.resource, named)
    assert compare_reports(a, a).differences == ()
    assert "No differences" in format_comparison(a, a)


def test_report_and_compare_commands(reports, tmp_path, capsys):
    a, b = reports
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    assert cli_main(["report", str(tmp_path / "a"), "--top-ops", "2"]) == 0
    out = capsys.readouterr().out
    assert "Top compute sets by compute time" in out and "Largest memory items" in out
    assert cli_main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "Differences:" in out and "throughput: B is" in out
    assert cli_main(["compare", str(tmp_path / "a"), str(tmp_path / "missing")]) == 2
    assert "is not one report" in capsys.readouterr().err
