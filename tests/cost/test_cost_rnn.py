"""One recurrent step's gate compute (ipusim.cost.rnn) worked by hand from popnn's compute sets
and the popops / popnn per-element figures."""

from __future__ import annotations

import pytest

from ipusim.cost import rnn
from ipusim.cost.compute import superstep_cycles
from ipusim.graph.op import get_op
from ipusim.graph.ops import rnn as rnn_ops  # noqa: F401 - registers the ops
from ipusim.graph.spec import TensorSpec
from ipusim.hardware import get_chip


def _by_hand(per_element: list[float]) -> int:
    """32 float elements (batch 4 × 8 units) fit one tile (128 bytes at least per tile): each
    compute set is one supervisor vertex, 6 workers × ⌈32/6⌉ = 6 elements in 3 vectors of 2:
    6 × 29 prologue + 11 supervisor + ⌈6 × 3 × 2 × cycles per element⌉."""
    return sum(6 * 29 + 11 + -(-36 * c // 1) for c in per_element)


def test_lstm_step_gates_cost_popnns_seven_compute_sets():
    # Gate non-linearities (3 sigmoids at 5.0 + a tanh at 5.0), the two products (1.5 each),
    # the cell add (1.5), tanh of the cell (5.0), the output product (1.5), copies of the 6
    # intermediates and of the 2 states (0.5 each).
    hand = _by_hand([20.0, 3.0, 1.5, 5.0, 1.5, 3.0, 1.0])
    work = rnn.cell_work("lstm_cell", batch=4, units=8, element_bytes=4, tiles=1472)
    assert (work.compute, work.compute_sets, work.tiles, work.exchange_bytes) == (hand, 7, 1, 0)


@pytest.mark.parametrize(
    "op, specs, sets",
    [
        ("lstm_cell", [(4, 32), (4, 8)], 7),
        ("lstm_cell_grad", [(4, 8), (4, 8), (4, 32), (4, 8), (4, 8)], 5),
        ("gru_cell", [(4, 24), (4, 24), (4, 8)], 9),
        ("gru_cell_grad", [(4, 8), (4, 24), (4, 24), (4, 8)], 10),
    ],
)
def test_cell_ops_reach_the_superstep_as_their_compute_sets_each_with_a_sync(op, specs, sets):
    chip = get_chip("GC200")
    ins = [TensorSpec(s, "float32") for s in specs]
    attrs = {"activation": "tanh", "recurrent_activation": "sigmoid"}
    outs = get_op(op).infer(*ins, **attrs)
    outs = [outs] if isinstance(outs, TensorSpec) else list(outs)
    cost = get_op(op).cost(ins, outs, **attrs)
    cycles = superstep_cycles(op, cost, ins, outs, attrs, chip, "fp32")
    assert cycles.compute_sets == sets
    assert cycles.sync == sets * chip.onchip_sync_cycles
    assert cycles.compute == rnn.cell_work(op, 4, 8, 4, chip.tiles).compute
