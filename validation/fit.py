"""Constants fitted to the calibration table, and their leave-one-out errors.

Most of the cost model comes from sourced figures and Graphcore's own planner formulas, with no
fitting. A few figures had no published value and were derived from rows of the table: they are
listed in :data:`FITTED` with the rows they were derived from. For each such row the validation
reports, beside its in-sample error, the error when the constant is refitted without it (leave
one out), so the table measures generalisation, not memory.

A fitted constant enters a row's time linearly, either as itself (an overhead in seconds) or as
its inverse (a bandwidth): the time per item is ``a + b·x`` with ``x`` the value or its
inverse. Each fit row is simulated at two values to find ``a`` and ``b``; the fit minimises the
squared relative errors of the rows' times, which has a closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from validation.rows import Row
from validation.run import Outcome


@dataclass(frozen=True)
class FittedConstant:
    """A hardware figure derived from rows of the table.

    Attributes:
        key: where it is set: a hardware path in system files (``host.per_execution_overhead``)
            or ``arg:NAME`` for a workload argument the rows give (``arg:host-overhead``).
        value: the value in the presets (base units: seconds, bytes/s).
        rows: ids of the rows it was derived from.
        inverse: the time depends on 1 / value (a bandwidth) rather than on the value.
        unit: the unit suffix written into override files.
        source: how it was derived.
        linked: other settings that follow it, as multiples of it (a shared gateway that is four
            times the per-IPU Streaming Memory figure, say).
        prior: the value a row is predicted with when no other row is left to fit it (a
            published figure the fit replaced), or None.
        anchors: (row, anchor row) pairs: the row is fitted through its ratio to the anchor,
            the same recipe where the constant does not enter (one Pod for a cross-Pod row).
            The anchor's own error (the device model's, for that recipe) then cancels, so the
            constant explains only what the row adds to the anchor, not the recipe's error.
    """

    key: str
    value: float
    rows: tuple[str, ...]
    inverse: bool
    unit: str
    source: str
    linked: tuple[tuple[str, float], ...] = ()
    prior: float | None = None
    anchors: tuple[tuple[str, str], ...] = ()

    def overrides(self, value: float) -> dict[str, str]:
        """The settings that give the constant ``value`` (and its linked settings theirs)."""
        out = {self.key: self.text(value)}
        out.update({key: self.text(value * factor) for key, factor in self.linked})
        return out

    def text(self, value: float) -> str:
        """The value as a system file (or a workload argument, in base units) writes it."""
        if self.key.startswith("arg:"):
            return f"{value:.6g}"
        scale = {"s": 1.0, "GB/s": 1e9}[self.unit]
        return f"{value / scale:.6g}{self.unit}"


FITTED: tuple[FittedConstant, ...] = (
    FittedConstant(
        key="host.per_execution_overhead",
        value=2.8e-3,
        rows=("K1", "K7"),
        inverse=False,
        unit="s",
        source="the Keras MNIST CNN at steps_per_execution 1 (rows K1, K7) against a whole "
        "epoch per execution (K8): the host's round trip per execution",
    ),
    FittedConstant(
        key="arg:host-overhead",
        value=1.75e-3,
        rows=("P4", "P1-onchip"),
        inverse=False,
        unit="s",
        source="PopXL's host round trip per session.run: the P4 MLP at one step per run "
        "(2.68 ms/step, its in-thread torch DataLoader and tqdm bar modelled apart: "
        "--torch-mnist-loop), with the P1 on-chip run; the P1 rows give it as --host-overhead",
    ),
    FittedConstant(
        key="streaming_memory.bandwidth_per_ipu",
        value=4.26e9,
        rows=("P1-offchip", "P1-rts"),
        inverse=True,
        unit="GB/s",
        source="the PopXL MLP with its Adam state in Streaming Memory (rows P1): the extra time "
        "per weight update over the state moved",
        linked=(("streaming_memory.shared_gateway_bandwidth", 4.0),),
    ),
    FittedConstant(
        key="gw_link.latency",
        value=78e-6,
        rows=("R2-pod128", "R2-pod256"),
        inverse=False,
        unit="s",
        source="the cost of one ring step across Pods (GW-Link latency and the gateways' "
        "synchronisation): MLPerf v1.1 ResNet-50 on POD128 and POD256 (small all-reduces, "
        "many per weight update), each through its ratio to the same recipe on one POD64",
        anchors=(("R2-pod128", "R2-pod64"), ("R2-pod256", "R2-pod64")),
    ),
    FittedConstant(
        key="gw_link.collective_bandwidth",
        value=11.7e9,
        rows=("BM2-pod128", "BM2-pod256"),
        inverse=True,
        unit="GB/s",
        source="the rate a Pod's share of a cross-Pod all-reduce reaches over the GW-Links: "
        "MLPerf v2.0 BERT-Large on Bow Pod128 and Bow Pod256 (the whole 330 M-parameter "
        "gradient crosses the Pods at every weight update), each through its ratio to the same "
        "recipe on one Bow Pod64",
        anchors=(("BM2-pod128", "BM2-pod64"), ("BM2-pod256", "BM2-pod64")),
    ),
    FittedConstant(
        key="host.stream_copy_overhead",
        value=27e-6,
        rows=("K8", "G11-replicated", "G11-pipelined"),
        inverse=False,
        unit="s",
        source="the host sync each stream copy pays: the Keras MNIST CNN at a whole epoch per "
        "execution on one IPU (K8), replicated (G11-replicated) and pipelined (G11-pipelined)",
    ),
    FittedConstant(
        key="host.stream_bandwidth",
        value=2.14e9,
        rows=("T1-real",),
        inverse=True,
        unit="GB/s",
        prior=5.5e9,
        source="stream copies from the host, serialised with compute: the PopTorch tutorial CNN "
        "with real against synthetic data (T1-real); without it, the 5.5 GB/s device-to-host "
        "figure of graphcore/examples vision/efficientdet/tensorflow2/README.md",
    ),
    FittedConstant(
        key="arg:host-overhead",
        value=9.4e-3,
        rows=("T1", "T1-real"),
        inverse=False,
        unit="s",
        source="PopTorch's host round trip per call of 50 device iterations: the tutorial CNN "
        "with synthetic and with real data (rows T1); the rows give it as --host-overhead",
    ),
)


@dataclass(frozen=True)
class Probe:
    """A row's time per item as a line in the constant: ``a + b·x``."""

    a: float
    b: float

    def time(self, x: float) -> float:
        return self.a + self.b * x


Runner = Callable[[Row, Mapping[str, str]], Outcome]


def probe(row: Row, constant: FittedConstant, run: Runner) -> Probe:
    """Simulate ``row`` at the constant's value and at 1.5 times it, and fit the line."""
    points = []
    for factor in (1.0, 1.5):
        value = constant.value * factor
        outcome = run(row, constant.overrides(value))
        x = 1.0 / value if constant.inverse else value
        points.append((x, 1.0 / outcome.predicted))
    (x0, t0), (x1, t1) = points
    b = (t1 - t0) / (x1 - x0)
    return Probe(t0 - b * x0, b)


def fit(probes: Mapping[str, Probe], measured: Mapping[str, float]) -> float | None:
    """The ``x`` minimising Σ ((a + b·x)·m − 1)² over the rows (m: measured items/s), or None
    when no row constrains it."""
    numerator = sum(p.b * m * (1.0 - p.a * m) for r, p in probes.items() for m in [measured[r]])
    denominator = sum((p.b * measured[r]) ** 2 for r, p in probes.items())
    if denominator <= 0:
        return None
    return numerator / denominator


@dataclass(frozen=True)
class CrossValidation:
    """In-sample and leave-one-out predictions of the rows a fitted constant was fitted to.

    Attributes:
        constant: the constant.
        in_sample_value: its value fitted to all its rows (compare with the preset's).
        loo_values: row id -> the value fitted without that row (None when no row is left).
        loo_predicted: row id -> the row's predicted throughput with that value.
    """

    constant: FittedConstant
    in_sample_value: float | None
    loo_values: Mapping[str, float | None]
    loo_predicted: Mapping[str, float]


def anchored_measured(
    constant: FittedConstant, fit_rows: Sequence[Row], rows: Sequence[Row], run: Runner
) -> dict[str, float]:
    """The throughput each fit row should reach: its measured one, scaled by its anchor's
    predicted / measured ratio when it has an anchor (so the fit matches the ratio); a row whose
    anchor is not among ``rows`` (a partial run) is fitted plainly."""
    by_id = {r.id: r for r in rows}
    anchor_of = dict(constant.anchors)
    measured = {}
    for row in fit_rows:
        anchor = by_id.get(anchor_of.get(row.id, ""))
        scale = 1.0
        if anchor is not None and anchor.expressible:
            scale = run(anchor, constant.overrides(constant.value)).predicted / anchor.measured
        measured[row.id] = row.measured * scale
    return measured


def cross_validate(constant: FittedConstant, rows: Sequence[Row], run: Runner) -> CrossValidation:
    """Fit ``constant`` to its rows, and refit it without each of them in turn."""
    fit_rows = [r for r in rows if r.id in constant.rows and r.expressible]
    probes = {r.id: probe(r, constant, run) for r in fit_rows}
    measured = anchored_measured(constant, fit_rows, rows, run)
    x_all = fit(probes, measured)
    value_all = None if x_all is None else (1.0 / x_all if constant.inverse else x_all)
    loo_values: dict[str, float | None] = {}
    loo_predicted: dict[str, float] = {}
    for row in fit_rows:
        others = {k: v for k, v in probes.items() if k != row.id}
        x = fit(others, measured)
        if (x is None or x <= 0) and constant.prior is not None:
            x = 1.0 / constant.prior if constant.inverse else constant.prior
        if x is None or x <= 0:
            loo_values[row.id] = None
            loo_predicted[row.id] = math.nan
            continue
        loo_values[row.id] = 1.0 / x if constant.inverse else x
        loo_predicted[row.id] = 1.0 / probes[row.id].time(x)
    return CrossValidation(constant, value_all, loo_values, loo_predicted)
