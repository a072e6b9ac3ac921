"""Convolutions with few channels per conv group (depthwise) on the SLIC and VMAC vertices,
costed as PopLibs' estimator does.

The vertex-cycle expectations are worked out by hand below from the formulas of poplibs
``PerformanceEstimation.hpp`` (the VMAC supervisor estimates and
``estimateConvPartialVerticalMacInnerLoopCycles``; the SLIC supervisor, inner-loop and
weight-load estimates), step by step in the comments.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipusim.cost import amp
from ipusim.cost.amp_small_groups import slic_cycles, vmac_cycles
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
    assert int(vmac_cycles(b, h, w, k, 3, ig, cg, 8, HALF)[0]) == 830


def test_vmac_cycles_of_a_split_tile_by_hand() -> None:
    # 4 positions for 6 workers: each cut in 6/gcd(6, 4) = 3 parts, 12 parts, 2 per worker
    # (0 whole, 2 part rows of ⌈3/3⌉ = 1 tap). 3 kernel rows, 4 conv groups, float partials.
    # Worker: 19 + 6 × (7 + 5 + 3) = 109; inner 654. Zeroing 4 + 16/2 = 12; reduction
    # 10 − 1 + (7 + 2 + 2·5)·⌈16/6⌉ / 4 = 9 + 57 // 4 = 23; outer 32 + (24 + 654) = 710.
    # Total 61 + 14 + 25 + 1 + (12 + 710 + 23) = 846.
    b, h, w, k, ig, cg = _one(1, 2, 2, 3, 1, 1)
    assert int(vmac_cycles(b, h, w, k, 3, ig, cg, 4, HALF_FLOAT_PARTIALS)[0]) == 846


def _depthwise_specs(
    op: str, n: int, size: int, channels: int, kernel: int, multiplier: int = 1, stride: int = 1
) -> tuple[list[TensorSpec], list[TensorSpec], dict]:
    """(input specs, output specs, attributes) of one pass of a depthwise convolution."""
    out = -(-size // stride)
    x = TensorSpec((n, size, size, channels), "float16")
    f = TensorSpec((kernel, kernel, channels, multiplier), "float16")
    y = TensorSpec((n, out, out, channels * multiplier), "float16")
    ins, outs = {
        "depthwise_conv2d": ([x, f], [y]),
        "depthwise_conv2d_backprop_input": ([y, f], [x]),
        "depthwise_conv2d_backprop_filter": ([x, y], [f]),
    }[op]
    return ins, outs, {"strides": stride, "padding": "same"}


def _depthwise(op: str, n: int, size: int, channels: int, kernel: int, target: amp.AmpTarget):
    return amp_plan(op, *_depthwise_specs(op, n, size, channels, kernel), target)


@contextlib.contextmanager
def _amp_alone() -> Iterator[None]:
    """Plan with the SLIC and VMAC vertices switched off (the AMP alone), as before they were
    added; the plan cache is cleared on the way in and out."""
    vmac, slic = amp.vmac_applies, amp.slic_applies
    amp.vmac_applies = lambda problem, target: False
    amp.slic_applies = lambda problem: False
    amp.plan_conv.cache_clear()
    try:
        yield
    finally:
        amp.vmac_applies, amp.slic_applies = vmac, slic
        amp.plan_conv.cache_clear()


LAYERS = [(16, 56, 144, 3), (16, 28, 240, 5), (8, 14, 480, 3), (16, 112, 32, 3)]
PASSES = ["depthwise_conv2d", "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter"]


def test_slic_cycles_of_one_row_by_hand() -> None:
    # 6 positions in one row (one per worker), one 1x4 window (a 1x3 kernel), 4 conv groups of
    # one channel, 4 conv-unit chains, half partials. Worker preamble 2+3+1+2+4+2+2+1 = 17.
    # Zeroing pass: a piece of 1 costs 10 + 1 + (10 + 3) = 24, worker 41, tile 6 × 41 = 246.
    # Weights: 9 + 6 + 6·10 + 6 + 16 = 97; sub-kernel body 97 + 3 + 2 + 1 + 6 + 1 + 6 + 1 = 117.
    # Total 28 + 15 + 1 + 117 + 1 + 246 = 408 (no accumulating pass with one sub-kernel).
    field, width, k, cg = _one(6, 6, 1, 1)
    assert int(slic_cycles(field, width, k, 3, cg, 4, 1, 4, 1, HALF)[0]) == 408


def test_slic_cycles_of_sixteen_groups_by_hand() -> None:
    # 2 rows of 8 positions (workers get 2, 3, 3, 2, 3, 3 positions, one piece each), 3x3
    # kernel (3 sub-kernels), 16 conv groups (4 strides of 4). Preamble 17 + 4 = 21.
    # Zeroing: a piece of 3 costs 10 + 1 + (10 + 3 + 3) = 27, worker 48, tile 288.
    # Accumulating: a piece of 3 costs 10 + (7 + 1 + 2 + 2 + 1 + 2 + 2 + 3) = 30, worker 51,
    # tile 306, × 4 strides = 1,224. Weights 9 + 6 + 6·11 + 6 + 16 = 103; stride body
    # 103 + 21 = 124; sub-kernel body 4·124 + 19 + 15 = 530; group body 15 + 8 = 23.
    # Total 28 + 23 + 1 + 3·530 + 13 + 288 + 2·1,224 = 4,391.
    field, width, k, cg = _one(16, 8, 3, 1)
    assert int(slic_cycles(field, width, k, 3, cg, 16, 1, 4, 1, HALF)[0]) == 4391


@pytest.mark.parametrize("layer", LAYERS, ids=str)
@pytest.mark.parametrize("op", PASSES)
def test_half_precision_depthwise_passes_take_the_cheapest_vertex(op: str, layer: tuple) -> None:
    best = _depthwise(op, *layer, HALF)
    with _amp_alone():
        alone = _depthwise(op, *layer, HALF)
    assert alone.method == "AMP"
    assert best.cycles <= alone.cycles
    if best.method == "AMP":
        assert best.cycles == alone.cycles


@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_depthwise_forward_passes_run_on_slic(layer: tuple) -> None:
    # SLIC applies the conv units to 4-tap windows of 4 conv groups at a time: it is the
    # cheapest of the three for these 3x3 and 5x5 depthwise layers.
    assert _depthwise("depthwise_conv2d", *layer, HALF).method == "SLIC"


@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_slic_never_beats_its_window_rate(layer: tuple) -> None:
    # A SLIC pass handles one position of a 4-tap window for 4 conv groups per worker cycle:
    # at most 16 MACs per tile cycle (6 workers share the issue slots).
    n, size, channels, kernel = layer
    plan = _depthwise("depthwise_conv2d", *layer, HALF)
    macs = n * size * size * kernel * kernel * channels
    assert macs / (plan.tiles * plan.partial_cycles) <= 16


@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_vmac_never_beats_its_dot_product_rate(layer: tuple) -> None:
    # The VMAC core takes 3 worker cycles per tap for 8 conv groups (6 workers share a tile's
    # issue slots): at most 8 MACs per 3 tile cycles. (The weight update: its input channels
    # are the batch, so SLIC, one input channel group per tile, does not suit it.)
    n, size, channels, kernel = layer
    plan = _depthwise("depthwise_conv2d_backprop_filter", *layer, HALF)
    assert plan.method == "VMAC"
    macs = n * size * size * kernel * kernel * channels
    assert macs / (plan.tiles * plan.partial_cycles) <= 8 / 3


def test_the_small_group_vertices_run_only_where_they_can() -> None:
    # fp32 activations: SLIC and VMAC are half only. Two output channels per group (depth
    # multiplier 2) or eight channels per group: not VMAC (one output channel per group);
    # SLIC may take them, splitting the channels over tiles in groups of 4 or fewer.
    assert _depthwise("depthwise_conv2d", 8, 28, 64, 3, FLOAT).method == "AMP"
    doubled = _depthwise_specs("depthwise_conv2d", 8, 28, 64, 3, multiplier=2)
    assert amp_plan("depthwise_conv2d", *doubled, HALF).method != "VMAC"
    x, fg, y = (TensorSpec(s, "float16") for s in ((8, 28, 28, 64), (3, 3, 8, 64), (8, 28, 28, 64)))
    attrs = {"strides": 1, "padding": "same", "groups": 8}
    grouped = amp_plan("grouped_conv2d", [x, fg], [y], attrs, HALF)
    assert grouped.method != "VMAC"
    # A matrix product never takes SLIC (poplin leaves it out of fully-connected plans).
    assert amp.plan_matmul(256, 256, 64, HALF).method == "AMP"


@pytest.mark.parametrize("layer", LAYERS[:2], ids=str)
def test_a_vmac_plan_maps_every_output_element_once(layer: tuple) -> None:
    n, size, channels, _ = layer
    plan = _depthwise("depthwise_conv2d", *layer, HALF)
    per_tile = planned_output(plan, 2)
    assert len(per_tile) == plan.tiles
    assert int(per_tile.sum()) == 2 * n * size * size * channels


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 8),
    size=st.integers(3, 40),
    channels=st.integers(2, 300),
    kernel=st.sampled_from([1, 3, 5]),
    stride=st.sampled_from([1, 2]),
    multiplier=st.sampled_from([1, 1, 2, 3]),
    op=st.sampled_from(PASSES),
    precision=st.sampled_from(["fp16.16", "fp16.32"]),
)
def test_depthwise_plans_of_any_shape_are_sound(
    n: int,
    size: int,
    channels: int,
    kernel: int,
    stride: int,
    multiplier: int,
    op: str,
    precision: str,
) -> None:
    # Any depthwise pass (any depth multiplier) gets a plan on the chip's tiles that maps every
    # output element once, and taking the cheapest of AMP, SLIC and VMAC never costs more than
    # the AMP plan alone.
    target = amp.AmpTarget.for_chip(IPU, precision)
    ins, outs, attrs = _depthwise_specs(op, n, size, channels, kernel, multiplier, stride)
    plan = amp_plan(op, ins, outs, attrs, target)
    assert 1 <= plan.tiles <= target.tiles
    assert plan.method in ("AMP", "SLIC", "VMAC")
    assert int(planned_output(plan, 1).sum()) == outs[0].size
    with _amp_alone():
        assert plan.cycles <= amp_plan(op, ins, outs, attrs, target).cycles
