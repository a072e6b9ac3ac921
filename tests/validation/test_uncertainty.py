"""validation.uncertainty: which rows count as host-bound, how a row is put on another host
preset, and the fitted-constant ranges (with a stand-in runner: no simulation)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ipusim.hardware.hosts import load_host
from validation.fit import CrossValidation, FittedConstant
from validation.rows import parse_row
from validation.uncertainty import constant_ranges, host_overrides, is_host_bound


def _row(**args):
    doc = {"id": "X", "title": "t", "measured": 100.0, "flag": "M", "source": "s"}
    return parse_row({**doc, "workload": "mlp", "args": {"system": "M2000", **args}}, "x.toml")


def _outcome(row, predicted, bound, **shares):
    return SimpleNamespace(row=row, predicted=predicted, bound=bound, shares=shares)


def test_a_row_is_host_bound_by_its_bottleneck_or_its_host_share() -> None:
    row = _row()
    assert is_host_bound(_outcome(row, 1.0, "host round trip", **{"host round trip": 0.2}))
    assert is_host_bound(
        _outcome(row, 1.0, "device compute", **{"device compute": 0.6, "host link": 0.3})
    )
    assert not is_host_bound(
        _outcome(row, 1.0, "device compute", **{"device compute": 0.8, "host link": 0.1})
    )


def test_a_rows_own_round_trip_follows_the_preset_like_the_systems() -> None:
    assert host_overrides(_row(), "EPYC-7763") == {"arg:host": "EPYC-7763"}
    ratio = load_host("Xeon-8168").round_trip_scale / load_host("EPYC-7742").round_trip_scale
    got = host_overrides(_row(**{"host-overhead": 2e-3}), "Xeon-8168")
    assert got["arg:host-overhead"] == pytest.approx(2e-3 * ratio)


def test_constant_ranges_take_the_leave_one_out_ends_for_rows_outside_the_fit() -> None:
    constant = FittedConstant(
        key="host.stream_copy_overhead",
        value=27e-6,
        rows=("A",),
        inverse=False,
        unit="s",
        source="s",
    )
    fit = CrossValidation(constant, 27e-6, {"A": 20e-6, "B": 30e-6}, {})
    inside = _outcome(_row(), 100.0, "host link", **{"host link": 0.5})
    inside = SimpleNamespace(
        **{**vars(inside), "row": SimpleNamespace(**{**vars(_row()), "id": "A"})}
    )
    outside = _outcome(_row(), 100.0, "host link", **{"host link": 0.5})
    idle = _outcome(_row(), 100.0, "device compute", **{"host link": 0.01})
    seen = []

    def runner(row, overrides):  # time grows with the sync: 100 items/s at 25 us
        value = float(overrides["host.stream_copy_overhead"].rstrip("s"))
        seen.append(value)
        return SimpleNamespace(predicted=100.0 * 25e-6 / value)

    ranges = constant_ranges([fit], [inside, outside, idle], runner)
    assert len(ranges) == 1 and ranges[0].row_id == "X"
    assert seen == [pytest.approx(20e-6), pytest.approx(30e-6)]
    assert ranges[0].predictions == (pytest.approx(125.0), pytest.approx(100.0 * 25 / 30))
