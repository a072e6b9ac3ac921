"""Recurrent ops: the time axis split into steps and back, zero states, and the gates of one
LSTM / GRU step with their gradients.

A recurrent layer is built, as PopLibs runs it, as a loop of T dependent steps: the input
projection of every step is one matrix product before the loop (popnn's ``preCalcWeights``,
``lib/popnn/Lstm.cpp`` ``calcSequenceWeightedInputs``; the Popnn layers multiply each step's input
in the step instead, as IPU TensorFlow runs popnn), then each step is the recurrent product
(a ``matmul`` node) and the gates (``lstm_cell`` / ``gru_cell``), so the program has one
superstep per op per step and the backward pass is a loop of the steps' gradients in reverse.
``unstack_time`` hands out the steps of a sequence (one node, whatever T: the gradients of all
steps come back in one ``stack_time``).

Gate order and equations are Keras' (see :mod:`ipusim.kernels.rnn`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, TypedDict

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Node, Symbol, TensorLike, apply1, apply_multi
from ipusim.graph.op import VARIADIC, Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.ops.math import _PassThrough, require_float
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import rnn as k

#: Activations the fused gate kernels compute (Keras names).
CELL_ACTIVATIONS = tuple(k.ACTIVATIONS)


def _check_activation(op: str, arg: str, value: object) -> str:
    if value not in k.ACTIVATIONS:
        raise ConfigurationError(
            f"{op}: {arg} must be one of {CELL_ACTIVATIONS}, received {value!r}"
        )
    return str(value)


class _Activations(TypedDict):
    activation: str
    recurrent_activation: str


def _activations(op: str, activation: object, recurrent_activation: object) -> _Activations:
    """A cell's ``activation`` and ``recurrent_activation`` attributes, checked."""
    return {
        "activation": _check_activation(op, "activation", activation),
        "recurrent_activation": _check_activation(op, "recurrent_activation", recurrent_activation),
    }


def _check_state(op: str, arg: str, spec: TensorSpec, like: TensorSpec) -> None:
    if spec.dtype != like.dtype or not spec.is_compatible_with(like.with_dtype(spec.dtype)):
        raise ConfigurationError(
            f"{op}: {arg} must have shape {like.shape} and dtype {like.dtype}, received "
            f"{spec.shape} {spec.dtype}"
        )


def _check_gates(op: str, arg: str, spec: TensorSpec, state: TensorSpec, gates: int) -> None:
    require_float(op, arg, spec)
    units = state.shape[-1]
    if units is None or spec.rank != 2 or state.rank != 2 or spec.shape[-1] != gates * units:
        raise ConfigurationError(
            f"{op}: {arg} must be (batch, {gates}·units) with known units for a state "
            f"of shape {state.shape}, received {spec.shape}"
        )


def _zeros_for(dy: Symbol | None, like: Symbol) -> Symbol:
    return dy if dy is not None else apply1("rnn_zeros", like, units=like.shape[-1])


# ----------------------------------------------------------------------------- time axis
@register
class UnstackTime(Op):
    """The slices of ``x`` along ``axis`` (a known size T): T outputs."""

    name = "unstack_time"
    kind = "data_movement"
    num_outputs = VARIADIC

    def infer(self, x: TensorSpec, *, axis: int) -> tuple[TensorSpec, ...]:
        if not 0 <= axis < x.rank or x.shape[axis] is None or x.shape[axis] == 0:
            raise ConfigurationError(
                f"unstack_time: axis {axis} of x (shape {x.shape}) must exist and have a known, "
                "non-zero size (the number of time steps)"
            )
        step = x.with_shape(x.shape[:axis] + x.shape[axis + 1 :])
        return tuple(step for _ in range(int(x.shape[axis] or 0)))

    def forward(self, ctx: ExecContext, x: Array, *, axis: int) -> tuple[Array, ...]:
        return k.unstack(x, axis)

    def gradient(self, node: Node, *dys: Symbol | None) -> list[Symbol]:
        parts = [_zeros_for(dy, out) for dy, out in zip(dys, node.outputs, strict=True)]
        return [apply1("stack_time", *parts, axis=node.attrs["axis"])]

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        # popnn slices its input sequence in place (RnnSlice): no copy.
        return OpCost(0, 0, 0, "data_movement")


@register
class StackTime(Op):
    """Steps stacked along a new ``axis`` (the output sequence, written step by step)."""

    name = "stack_time"
    kind = "data_movement"

    def infer(self, *steps: TensorSpec, axis: int) -> TensorSpec:
        if not steps:
            raise ConfigurationError("stack_time: needs at least one step")
        first = steps[0]
        for spec in steps[1:]:
            _check_state(self.name, "every step", spec, first)
        if not 0 <= axis <= first.rank:
            raise ConfigurationError(
                f"stack_time: axis {axis} out of range for steps of rank {first.rank}"
            )
        return first.with_shape(first.shape[:axis] + (len(steps),) + first.shape[axis:])

    def forward(self, ctx: ExecContext, *steps: Array, axis: int) -> Array:
        return k.stack(steps, axis)

    def gradient(self, node: Node, dy: Symbol) -> Sequence[Symbol]:
        return apply_multi("unstack_time", dy, axis=node.attrs["axis"])


@register
class RnnZeros(Op):
    """Zeros of shape ``like.shape[:-1] + (units,)``: an initial state, a missing gradient."""

    name = "rnn_zeros"
    kind = "elementwise"

    def infer(self, like: TensorSpec, *, units: int) -> TensorSpec:
        return like.with_shape((*like.shape[:-1], int(units)))

    def forward(self, ctx: ExecContext, like: Array, *, units: int) -> Array:
        return np.zeros((*like.shape[:-1], units), dtype=like.dtype)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        return OpCost(out_specs[0].size, 0, out_specs[0].nbytes, "elementwise")


@register
class RnnCarry(_PassThrough):
    """A loop-invariant value (a weight) handed from one time step to the next.

    The value is unchanged (a view, no work); what it changes is the gradient: each step's
    contribution is added to the running sum as the backward loop passes that step, as popnn
    accumulates its weight gradients step by step (``Lstm.cpp`` ``basicLstmParamUpdate``:
    ``matMulAcc`` into the accumulated gradients), instead of every step's contribution being
    kept until the end of the backward pass and summed there.
    """

    name = "rnn_carry"


def carry(x: TensorLike) -> Symbol:
    """``x`` handed to the next time step (see :class:`RnnCarry`)."""
    return apply1("rnn_carry", x)


def unstack_time(x: TensorLike, axis: int) -> tuple[Symbol, ...]:
    """The time steps of ``x`` along ``axis``."""
    return tuple(apply_multi("unstack_time", x, axis=int(axis)))


def stack_time(steps: Sequence[TensorLike], axis: int) -> Symbol:
    """``steps`` stacked along a new ``axis``."""
    return apply1("stack_time", *steps, axis=int(axis))


def zero_state(like: TensorLike, units: int) -> Symbol:
    """Zeros of shape ``(batch, units)`` for the batch of ``like``."""
    return apply1("rnn_zeros", like, units=int(units))


# ------------------------------------------------------------------------------------ LSTM
class _Cell(Op):
    kind = "elementwise"
    #: ``kernel(*inputs, activation, recurrent_activation)`` computes the op's outputs.
    kernel: ClassVar[Callable[..., Array | tuple[Array, ...]]]

    def forward(
        self, ctx: ExecContext, *inputs: Array, activation: str, recurrent_activation: str
    ) -> Array | tuple[Array, ...]:
        return self.kernel(*inputs, activation, recurrent_activation)

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        state = min((*in_specs, *out_specs), key=lambda s: s.size)
        return io_cost(self.flops_per_unit * state.size, in_specs, out_specs, "elementwise")

    flops_per_unit = 1


@register
class LstmCell(_Cell):
    """One LSTM step's gates: ``(h, c)`` from the pre-activations ``z`` (batch, 4·units; order
    ``i, f, c, o``) and the previous cell state."""

    name = "lstm_cell"
    kernel = staticmethod(k.lstm_cell)
    num_outputs = 2
    #: 3 recurrent activations, 2 activations, 3 products and an add per unit (E: one FLOP each).
    flops_per_unit = 9

    def infer(
        self, z: TensorSpec, c_prev: TensorSpec, *, activation: str, recurrent_activation: str
    ) -> tuple[TensorSpec, TensorSpec]:
        _activations(self.name, activation, recurrent_activation)
        _check_gates(self.name, "z", z, c_prev, 4)
        _check_state(self.name, "c_prev", c_prev, c_prev.with_dtype(z.dtype))
        return c_prev, c_prev

    def gradient(self, node: Node, dh: Symbol | None, dc: Symbol | None) -> list[Symbol]:
        z, c_prev = node.inputs
        h, c = node.outputs
        dz, dc_prev = apply_multi(
            "lstm_cell_grad", _zeros_for(dh, h), _zeros_for(dc, c), z, c_prev, c, **node.attrs
        )
        return [dz, dc_prev]


@register
class LstmCellGrad(_Cell):
    """Backward of ``lstm_cell``: ``(dz, dc_prev)`` from ``dh``, ``dc`` and the step's stash."""

    name = "lstm_cell_grad"
    kernel = staticmethod(k.lstm_cell_grad)
    num_outputs = 2
    flops_per_unit = 20

    def infer(
        self,
        dh: TensorSpec,
        dc: TensorSpec,
        z: TensorSpec,
        c_prev: TensorSpec,
        c: TensorSpec,
        *,
        activation: str,
        recurrent_activation: str,
    ) -> tuple[TensorSpec, TensorSpec]:
        _check_gates(self.name, "z", z, c_prev, 4)
        for arg, spec in (("dh", dh), ("dc", dc), ("c", c)):
            _check_state(self.name, arg, spec, c_prev)
        return z, c_prev


def lstm_cell(
    z: TensorLike,
    c_prev: TensorLike,
    *,
    activation: str = "tanh",
    recurrent_activation: str = "sigmoid",
) -> tuple[Symbol, Symbol]:
    """One LSTM step's gates (see :class:`LstmCell`); returns ``(h, c)``."""
    h, c = apply_multi(
        "lstm_cell", z, c_prev, **_activations("lstm_cell", activation, recurrent_activation)
    )
    return h, c


# ------------------------------------------------------------------------------------- GRU
@register
class GruCell(_Cell):
    """One GRU step, reset gate after the recurrent product (Keras ``reset_after=True``):
    ``h`` from ``xg = x·W + b_in`` and ``hg = h_prev·U + b_rec`` (order ``z, r, h``)."""

    name = "gru_cell"
    kernel = staticmethod(k.gru_cell)
    #: 2 recurrent activations, an activation, 3 adds, 3 products per unit (E: one FLOP each).
    flops_per_unit = 9

    def infer(
        self,
        xg: TensorSpec,
        hg: TensorSpec,
        h_prev: TensorSpec,
        *,
        activation: str,
        recurrent_activation: str,
    ) -> TensorSpec:
        _activations(self.name, activation, recurrent_activation)
        _check_gates(self.name, "xg", xg, h_prev, 3)
        _check_gates(self.name, "hg", hg, h_prev, 3)
        _check_state(self.name, "h_prev", h_prev, h_prev.with_dtype(xg.dtype))
        return h_prev

    def gradient(self, node: Node, dh: Symbol) -> list[Symbol]:
        return list(apply_multi("gru_cell_grad", dh, *node.inputs, **node.attrs))


@register
class GruCellGrad(_Cell):
    """Backward of ``gru_cell``: ``(dxg, dhg, dh_prev)`` (``dh_prev``: the direct path only)."""

    name = "gru_cell_grad"
    kernel = staticmethod(k.gru_cell_grad)
    num_outputs = 3
    flops_per_unit = 18

    def infer(
        self,
        dh: TensorSpec,
        xg: TensorSpec,
        hg: TensorSpec,
        h_prev: TensorSpec,
        *,
        activation: str,
        recurrent_activation: str,
    ) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
        _check_gates(self.name, "xg", xg, h_prev, 3)
        _check_state(self.name, "dh", dh, h_prev)
        return xg, hg, h_prev


def gru_cell(
    xg: TensorLike,
    hg: TensorLike,
    h_prev: TensorLike,
    *,
    activation: str = "tanh",
    recurrent_activation: str = "sigmoid",
) -> Symbol:
    """One GRU step with the reset gate after the recurrent product (see :class:`GruCell`)."""
    checked = _activations("gru_cell", activation, recurrent_activation)
    return apply1("gru_cell", xg, hg, h_prev, **checked)
