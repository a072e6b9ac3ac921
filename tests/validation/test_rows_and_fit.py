"""Validation rows load strictly; the fitted constants' closed-form fit and leave-one-out refit."""

from __future__ import annotations

import importlib
import math

import pytest

from ipusim.hardware import load_system
from validation.fit import FITTED, FittedConstant, Probe, cross_validate, fit
from validation.rows import Row, RowError, load_rows, parse_row
from validation.run import Outcome


def test_every_packaged_row_loads_and_names_a_workload() -> None:
    rows = load_rows()
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)) >= 20
    for row in rows:
        assert row.measured > 0 and row.source and row.flag
        if row.expressible:
            module = importlib.import_module(f"workloads.{row.workload}")
            assert callable(module.main)
            assert row.argv()[0] == "--timing-only"
        else:
            assert row.reason
    # the calibration set of the hardware reference, sections 3 and 3b
    for required in ("R1", "R2", "R4-pod16", "B1", "B4", "B7", "K1", "K7", "K8", "P4", "T1"):
        assert required in ids
    fitted_rows = {r for c in FITTED for r in c.rows}
    assert fitted_rows <= set(ids)


def test_bad_rows_are_rejected_with_the_file_and_the_key(tmp_path) -> None:
    good = {"id": "X", "title": "t", "measured": 1.0, "flag": "M", "source": "s", "workload": "mlp"}
    assert parse_row(good, "x.toml").workload == "mlp"
    with pytest.raises(RowError, match=r"x\.toml: unknown key 'mesured'; did you mean 'measured'"):
        parse_row({**good, "mesured": 2}, "x.toml")
    with pytest.raises(RowError, match="missing source"):
        parse_row({k: v for k, v in good.items() if k != "source"}, "x.toml")
    with pytest.raises(RowError, match="needs a reason"):
        parse_row({**good, "expressible": False}, "x.toml")
    with pytest.raises(RowError, match="positive number"):
        parse_row({**good, "measured": -3}, "x.toml")
    with pytest.raises(RowError, match="no row 'R9'"):
        load_rows(only=["R9"])


def test_argv_lists_flags_lists_and_reduced_values() -> None:
    row = Row(
        "X",
        "t",
        1.0,
        "M",
        "s",
        workload="mlp",
        args={"steps": 100, "hidden": [8, 8], "recompute": True, "offload": False},
        reduced={"steps": 10},
    )
    assert row.argv() == ["--timing-only", "--steps", "100", "--hidden", "8", "8", "--recompute"]
    assert row.argv(reduced=True)[2] == "10"
    assert row.argv(replace={"steps": 7})[2] == "7"


def test_fit_minimises_the_relative_errors_in_closed_form() -> None:
    # Two rows whose time per item is a + b x; measured items/s m. The fit of x minimises
    # sum((a + b x) m - 1)^2: by hand, x = sum(b m (1 - a m)) / sum((b m)^2).
    probes = {"A": Probe(1e-6, 2.0), "B": Probe(3e-6, 1.0)}
    measured = {"A": 1e5, "B": 2e5}
    x = fit(probes, measured)
    expected = (2.0 * 1e5 * (1 - 1e-6 * 1e5) + 1.0 * 2e5 * (1 - 3e-6 * 2e5)) / (
        (2.0 * 1e5) ** 2 + (1.0 * 2e5) ** 2
    )
    assert x == pytest.approx(expected, rel=1e-12)
    assert fit({}, {}) is None


def test_cross_validation_refits_without_each_row() -> None:
    # A fake runner: time per item = a_r + b_r * overhead, as a host overhead enters a run.
    lines = {"A": (1e-6, 1.0), "B": (2e-6, 0.5)}
    constant = FittedConstant("arg:host-overhead", 1e-6, ("A", "B"), False, "s", "test")
    true_x = 4e-6
    rows = [
        Row(r, r, 1.0 / (a + b * true_x), "M", "s", workload="mlp") for r, (a, b) in lines.items()
    ]

    def run(row, overrides):
        a, b = lines[row.id]
        value = float(overrides["arg:host-overhead"])
        return Outcome(row, 1.0 / (a + b * value), "host round trip")

    result = cross_validate(constant, rows, run)
    assert result.in_sample_value == pytest.approx(true_x, rel=1e-9)
    for row in rows:  # consistent rows: each one alone recovers the same value
        assert result.loo_values[row.id] == pytest.approx(true_x, rel=1e-9)
        assert result.loo_predicted[row.id] == pytest.approx(row.measured, rel=1e-9)
    lonely = FittedConstant("arg:host-overhead", 1e-6, ("A",), False, "s", "test", prior=2e-6)
    alone = cross_validate(lonely, rows, run)
    assert alone.loo_values["A"] == 2e-6  # no other row: the published prior
    assert math.isclose(alone.loo_predicted["A"], 1.0 / (1e-6 + 2e-6))


def test_an_anchored_row_is_fitted_through_its_ratio_to_its_anchor() -> None:
    # The device model is 10% fast for this recipe: its one-Pod anchor Z comes out at 1.1 times
    # its measured rate, whatever the constant. The rows across Pods A and B, whose time per
    # item is a + b x, measured at the true x but also 10% fast in the model: fitted through
    # their ratios to Z, the constant comes out at the true x; fitted alone, it would soak up
    # the 10% (by hand, for row A alone: x = (1 - a m) / (b m), above the true x).
    lines = {"A": (1e-6, 1.0), "B": (2e-6, 0.5)}
    true_x, fast = 4e-6, 1.1
    rows = [
        Row(r, r, 1.0 / (a + b * true_x) / fast, "M", "s", workload="mlp")
        for r, (a, b) in lines.items()
    ]
    rows.append(Row("Z", "Z", 1000.0, "M", "s", workload="mlp"))

    def run(row, overrides):
        if row.id == "Z":
            return Outcome(row, fast * row.measured, "device compute")
        a, b = lines[row.id]
        return Outcome(row, 1.0 / (a + b * float(overrides["arg:host-overhead"])), "link")

    anchored = FittedConstant(
        "arg:host-overhead", 1e-6, ("A", "B"), False, "s", "t", anchors=(("A", "Z"), ("B", "Z"))
    )
    result = cross_validate(anchored, rows, run)
    assert result.in_sample_value == pytest.approx(true_x, rel=1e-9)
    assert result.loo_values["A"] == pytest.approx(true_x, rel=1e-9)
    # the predictions stay absolute: 10% above the measured rate, as the anchor is
    assert result.loo_predicted["A"] == pytest.approx(fast * rows[0].measured, rel=1e-9)
    plain = cross_validate(
        FittedConstant("arg:host-overhead", 1e-6, ("A",), False, "s", "t"), rows, run
    )
    a, b = lines["A"]
    m = rows[0].measured
    assert plain.in_sample_value == pytest.approx((1.0 - a * m) / (b * m), rel=1e-9)
    assert plain.in_sample_value > true_x


def test_fitted_values_are_the_ones_the_rows_and_presets_use() -> None:
    # A fitted constant is written twice: in FITTED (for the refits) and where the runs read it
    # (a workload argument of its rows, or a system preset). The two must not drift apart.
    rows = {row.id: row for row in load_rows()}
    for constant in FITTED:
        for row_id in constant.rows:
            row = rows[row_id]
            if constant.key.startswith("arg:"):
                assert row.args[constant.key[4:]] == constant.value, (row_id, constant.key)
            else:
                system = str(row.args.get("system") or "IPU")
                preset = load_system(system)
                assert load_system(system, constant.overrides(constant.value)) == preset, (
                    row_id,
                    constant.key,
                )
