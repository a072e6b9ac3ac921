"""Costs of the ops the attention / augmentation / lookup layers added: each is costed as the
IPU work it is (a copy, a gather of taps, a per-element vertex), not as a default binary op."""

from __future__ import annotations

import ipusim.graph.ops  # noqa: F401  (registers the ops)
from ipusim.cost import vector
from ipusim.cost.compute import superstep_cycles
from ipusim.graph.op import get_op
from ipusim.graph.spec import TensorSpec
from ipusim.hardware import load_system

IPU = load_system("IPU").ipu
IMAGES = TensorSpec((32, 64, 64, 3), "float32")


def _cycles(op: str, ins: list[TensorSpec], **attrs) -> int:
    outs = [get_op(op).infer(*ins, **attrs)]
    cost = get_op(op).cost(ins, outs, **attrs)
    return superstep_cycles(op, cost, ins, outs, attrs, IPU, "fp32").compute


def test_reverse_and_random_crop_cost_what_a_copy_of_their_output_costs():
    copy = vector.copy(IMAGES.size, 4, IPU.tiles).compute
    assert _cycles("reverse", [IMAGES], axes=(2,)) == copy
    crop = vector.copy(32 * 60 * 60 * 3, 4, IPU.tiles).compute
    assert _cycles("random_crop", [IMAGES], height=60, width=60, seed=1) == crop


def test_image_transform_is_a_gather_of_four_taps_bilinear_one_nearest():
    maps = TensorSpec((32, 8), "float32")
    common = {"fill_mode": "reflect", "fill_value": 0.0, "inverse": False}
    bilinear = _cycles("image_transform", [IMAGES, maps], interpolation="bilinear", **common)
    nearest = _cycles("image_transform", [IMAGES, maps], interpolation="nearest", **common)
    assert bilinear == vector.gather(IMAGES.size * 4, 4, IPU.tiles, scatter=False).compute
    assert nearest == vector.gather(IMAGES.size, 4, IPU.tiles, scatter=False).compute
    assert bilinear > 2 * nearest  # four taps against one, less the fixed vertex overhead


def test_random_draws_cost_as_dropout_and_hashing_more_than_a_lookup():
    x = TensorSpec((1024, 1024), "float32")
    draw = _cycles("random_draw", [x], distribution="normal", seed=1, shape=(None, None), a=0, b=1)
    assert draw == vector.elementwise("dropout", x.size, 4, IPU.tiles).compute
    ids = TensorSpec((1024, 1024), "int32")
    keys = tuple(range(100))
    lookup = _cycles("table_lookup", [ids], keys=keys, values=keys, default=0)
    assert _cycles("hash_bucket", [ids], num_bins=10) > lookup


def test_image_resize_is_a_gather_of_its_taps_and_its_gradient_a_scatter():
    small = TensorSpec((32, 40, 40, 3), "float32")
    fwd = _cycles("image_resize", [IMAGES], size=(40, 40), method="bilinear")
    assert fwd == vector.gather(small.size * 4, 4, IPU.tiles, scatter=False).compute
    grad = _cycles("image_resize_grad", [small], input_hw=(64, 64), method="nearest")
    assert grad == vector.gather(small.size, 4, IPU.tiles, scatter=True).compute
