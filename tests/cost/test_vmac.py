"""Depthwise convolutions on the VMAC vertex, costed as PopLibs' estimator does.

The vertex-cycle expectations are worked out by hand below from the formulas of poplibs
``PerformanceEstimation.hpp`` (``estimateConvPartialVerticalMacInnerLoopCycles`` and the VMAC
supervisor estimates), step by step in the comments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipusim.cost import amp
from ipusim.cost.compute import amp_plan
from ipusim.graph.spec import TensorSpec
from ipusim.hardware import get_chip
from ipusim.lowering.tile_mapping import planned_output

IPU = get_chip("GC200")
HALF = amp.AmpTarget.for_chip(IPU, "fp16.16")
HALF_FLOAT_PARTIALS = amp.AmpTarget.for_chip(IPU, "fp16.32")
FLOAT = amp.AmpTarget.for_chip(IPU, "fp32")


def _one(*values: int) -> list[np.ndarray]:
    return [np.array([v], dtype=np.int64) for v in values]


def test_vmac_cycles_of_an_even_tile_by_hand() -> None:
    # 6 output positions (one per worker), 3 kernel rows of 3 taps, 8 conv groups, half
    # partials. Worker: 13 + 3 dot products × (7 + 15 + (3 + 3·2)) = 13 + 93 = 106; inner
    # 6 × 106 = 636. Zeroing 4 + 48/4 = 16; reduction 10 + (7 + 5)·8 / 8 = 22; outer loop
    # 32 + (24 + 636) = 692. Total 61 + 14 + 25 + (16 + 692 + 22) = 830.
    b, h, w, k, ig, cg = _one(1, 1, 6, 3, 1, 1)
    assert int(amp._vmac_cycles(b, h, w, k, 3, ig, cg, 8, HALF)[0]) == 830


def test_vmac_cycles_of_a_split_tile_by_hand() -> None:
    # 4 positions for 6 workers: each cut in 6/gcd(6, 4) = 3 parts, 12 parts, 2 per worker
    # (0 whole, 2 part rows of ⌈3/3⌉ = 1 tap). 3 kernel rows, 4 conv groups, float partials.
    # Worker: 19 + 6 × (7 + 5 + 3) = 109; inner 654. Zeroing 4 + 16/2 = 12; reduction
    # 10 − 1 + (7 + 2 + 2·5)·⌈16/6⌉ / 4 = 9 + 57 // 4 = 23; outer 32 + (24 + 654) = 710.
    # Total 61 + 14 + 25 + 1 + (12 + 710 + 23) = 846.
    b, h, w, k, ig, cg = _one(1, 2, 2, 3, 1, 1)
    assert int(amp._vmac_cycles(b, h, w, k, 3, ig, cg, 4, HALF_FLOAT_PARTIALS)[0]) == 846


def _depthwise(op: str, n: int, size: int, channels: int, kernel: int, target: amp.AmpTarget):
    x = TensorSpec((n, size, size, channels), "float16")
    f = TensorSpec((kernel, kernel, channels, 1), "float16")
    y = TensorSpec((n, size, size, channels), "float16")
    attrs = {"strides": 1, "padding": "same"}
    if op == "depthwise_conv2d":
        return amp_plan(op, [x, f], [y], attrs, target)
    if op == "depthwise_conv2d_backprop_input":
        return amp_plan(op, [y, f], [x], attrs, target)
    return amp_plan(op, [x, y], [f], attrs, target)


LAYERS = [(16, 56, 144, 3), (16, 28, 240, 5), (8, 14, 480, 3), (16, 112, 32, 3)]
PASSES = ["depthwise_conv2d", "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter"]


@pytest.fixture
def amp_only(monkeypatch: pytest.MonkeyPatch):
    """Plans made with the VMAC vertex switched off (the planner before it was added)."""

    def plan(*args):
        monkeypatch.setattr(amp, "vmac_applies", lambda problem, target: False)
        amp.plan_conv.cache_clear()
        try:
            return _depthwise(*args)
        finally:
            monkeypatch.undo()
            amp.plan_conv.cache_clear()

    return plan


@pytest.mark.parametrize("layer", LAYERS, ids=str)
@pytest.mark.parametrize("op", PASSES)
def test_half_precision_depthwise_passes_pick_vmac_when_it_is_cheaper(
    op: str, layer: tuple, amp_only
) -> None:
    with_vmac = _depthwise(op, *layer, HALF)
    without = amp_only(op, *layer, HALF)
    assert with_vmac.cycles <= without.cycles
    assert with_vmac.method == ("VMAC" if with_vmac.cycles < without.cycles else "AMP")
    assert without.method == "AMP"


@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_vmac_never_beats_its_dot_product_rate(layer: tuple) -> None:
    # The VMAC core takes 3 worker cycles per tap for 8 conv groups (6 workers share a tile's
    # issue slots): at most 8 MACs per 3 tile cycles.
    n, size, channels, kernel = layer
    plan = _depthwise("depthwise_conv2d", *layer, HALF)
    assert plan.method == "VMAC"
    macs = n * size * size * kernel * kernel * channels
    assert macs / (plan.tiles * plan.partial_cycles) <= 8 / 3


def test_vmac_is_not_used_where_the_vertex_cannot_run() -> None:
    # fp32 activations (the assembly vertex is half only), two output channels per group
    # (depth multiplier 2), and grouped convolutions with several channels per group.
    assert _depthwise("depthwise_conv2d", 8, 28, 64, 3, FLOAT).method == "AMP"
    x = TensorSpec((8, 28, 28, 64), "float16")
    f2 = TensorSpec((3, 3, 64, 2), "float16")
    y2 = TensorSpec((8, 28, 28, 128), "float16")
    attrs = {"strides": 1, "padding": "same"}
    assert amp_plan("depthwise_conv2d", [x, f2], [y2], attrs, HALF).method == "AMP"
    fg = TensorSpec((3, 3, 8, 64), "float16")
    y = TensorSpec((8, 28, 28, 64), "float16")
    grouped = amp_plan("grouped_conv2d", [x, fg], [y], dict(attrs, groups=8), HALF)
    assert grouped.method == "AMP"


@pytest.mark.parametrize("layer", LAYERS[:2], ids=str)
def test_a_vmac_plan_maps_every_output_element_once(layer: tuple) -> None:
    n, size, channels, _ = layer
    plan = _depthwise("depthwise_conv2d", *layer, HALF)
    per_tile = planned_output(plan, 2)
    assert len(per_tile) == plan.tiles
    assert int(per_tile.sum()) == 2 * n * size * size * channels


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 8),
    size=st.integers(3, 40),
    channels=st.integers(2, 300),
    kernel=st.sampled_from([1, 3, 5]),
    stride=st.sampled_from([1, 2]),
    op=st.sampled_from(PASSES),
    precision=st.sampled_from(["fp16.16", "fp16.32"]),
)
def test_depthwise_plans_of_any_shape_are_sound(
    n: int, size: int, channels: int, kernel: int, stride: int, op: str, precision: str
) -> None:
    # Any depthwise pass gets a plan on the chip's tiles that maps every output element once,
    # and taking the cheaper of AMP and VMAC never costs more than the AMP plan alone.
    target = amp.AmpTarget.for_chip(IPU, precision)
    out = -(-size // stride)
    x = TensorSpec((n, size, size, channels), "float16")
    f = TensorSpec((kernel, kernel, channels, 1), "float16")
    y = TensorSpec((n, out, out, channels), "float16")
    attrs = {"strides": stride, "padding": "same"}
    ins, outs = {
        "depthwise_conv2d": ([x, f], [y]),
        "depthwise_conv2d_backprop_input": ([y, f], [x]),
        "depthwise_conv2d_backprop_filter": ([x, y], [f]),
    }[op]
    plan = amp_plan(op, ins, outs, attrs, target)
    assert 1 <= plan.tiles <= target.tiles
    assert plan.method in ("AMP", "VMAC")
    assert int(planned_output(plan, 1).sum()) == outs[0].size
    original = amp.vmac_applies
    try:
        amp.vmac_applies = lambda problem, target: False
        amp.plan_conv.cache_clear()
        assert plan.cycles <= amp_plan(op, ins, outs, attrs, target).cycles
    finally:
        amp.vmac_applies = original
        amp.plan_conv.cache_clear()
