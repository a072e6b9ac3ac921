"""The element-wise work of one recurrent time step, as popnn compiles it.

A recurrent layer on the IPU is PopLibs' ``popnn::lstm`` / ``popnn::gru``: a loop of T dependent
steps (``popnn::rnn::Rnn`` in ``lib/popnn/Rnn.cpp``), each step its own compute sets and syncs.
The matrix products of a step (the recurrent product, and in the backward pass the gradient
through it and the weight-gradient product) are graph nodes of their own, planned by
:mod:`ipusim.cost.amp` like every matmul; this module costs the rest of a step: the gate
non-linearities and products, and the copies into the stash of forward intermediates and into
the state tensors.

Each pass below is one compute set of 1-D vertices over the step's ``batch × units`` elements,
costed per element with :data:`ipusim.cost.vector.ELEMENTWISE_CYCLES` (popops / popnn figures).
Sources (graphcore/poplibs, read from the public repository):

- LSTM forward, ``lib/popnn/Lstm.cpp`` ``basicLstmCellForwardPass`` (training: it writes the
  intermediates): one compute set for the gate non-linearities (``applyGateNonlinearities``:
  the recurrent activation over the input, forget and output gates and the activation over the
  candidate), ``{Forget + Input}Gate`` (two products), ``AddCellCand``, the activation of the
  cell state, ``OutputGate``; then ``Copy`` of the 6 intermediates (``getNumFwdIntermediatesTo
  Save``, recomputation mode ``none``, the default) and of the new state (output and cell).
- LSTM backward, ``Lstm.cpp`` ``backwardStepImpl``: ``MulOGate`` (2 products), one compute set of
  2 non-linearity gradients, ``AddCellState``, 4 products, one compute set of 3 non-linearity
  gradients.
- GRU forward, reset after (``lib/popnn/Gru.cpp`` ``gruCellForwardPassCalcUnitsResetAfter`` and
  ``basicGruCellForwardPass``): copy of the recurrent candidate, add of the reset/update
  pre-activations, their non-linearity, ``r·(h·U_h)``, add, the candidate's non-linearity, the
  output ``c + u·(h − c)`` (one ``mapInPlace`` of 3 operations), copy of the intermediates
  (``getNumFwdIntermediatesToSave``: 4) and of the state.
- GRU backward, reset after (``Gru.cpp`` ``backwardStepImplResetAfter``): 2 copies, 2
  subtractions, a product of 2, 3 non-linearity gradients, 2 products.

The bias adds and the sum of the gradient from the next layer with the one from the next step
are separate graph nodes here (``add`` / ``bias_add``), so they are not counted again.
"""

from __future__ import annotations

from ipusim.cost import vector

_E = vector.ELEMENTWISE_CYCLES


def _per(op: str, half: bool) -> float:
    return _E[op][0 if half else 1]


def _passes(op: str, half: bool) -> list[float]:
    """Cycles per (batch × units) element of each compute set of one step's ``op``."""
    mul, add, copy = _per("multiply", half), _per("add", half), _per("copy", half)
    sig, tanh = _per("sigmoid", half), _per("tanh", half)
    grad = _per("sigmoid_grad", half)
    # The passes and their element counts per unit are read off the PopLibs functions named in
    # the module docstring (S); the cycles per element are vector.ELEMENTWISE_CYCLES' (S). The
    # activations are costed as sigmoid / tanh whatever the layer's (E: relu and hard sigmoid
    # are cheaper, so this errs slow), and a 3-operation mapInPlace as 3 adds (E).
    if op == "lstm_cell":
        return [3 * sig + tanh, 2 * mul, add, tanh, mul, 6 * copy, 2 * copy]
    if op == "lstm_cell_grad":
        return [2 * mul, 2 * grad, add, 4 * mul, 3 * grad]
    if op == "gru_cell":
        return [copy, 2 * add, 2 * sig, mul, add, tanh, 3 * add, 4 * copy, copy]
    if op == "gru_cell_grad":
        return [copy, copy, add, add, 2 * mul, grad, grad, mul, grad, mul]
    raise ValueError(f"{op!r} is not a recurrent-cell op")


#: The recurrent-cell ops this module costs.
CELL_OPS = frozenset({"lstm_cell", "lstm_cell_grad", "gru_cell", "gru_cell_grad"})


def cell_work(op: str, batch: int, units: int, element_bytes: int, tiles: int) -> vector.VectorWork:
    """The vector work of one time step's gates (``op`` in :data:`CELL_OPS`).

    Args:
        op: the cell op.
        batch: samples in the step.
        units: the layer's units (state size).
        element_bytes: 2 (half) or 4 (float).
        tiles: tiles of the IPU.

    Returns:
        Compute cycles of the busiest tile over the step's compute sets, their count and the
        tiles used; the state and the stash stay on the tiles that hold them (popnn maps the
        gates like the cell state, ``rearrangeUnitsOutputFwd``), so nothing is received.
    """
    half = element_bytes == 2
    used, per_tile = vector.spread(batch * units, element_bytes, tiles)
    passes = _passes(op, half)
    compute = sum(vector.vertex_cycles(per_tile, per, half) for per in passes)
    return vector.VectorWork(compute, 0, len(passes), used)
