"""Recurrent-cell kernels: the element-wise part of one LSTM or GRU time step and its gradient.

A recurrent layer is a loop over time whose body is a matrix product (done by the dense wrapper,
NumPy's BLAS, as every other product) followed by the gates. These kernels are the gates: one
pass over the ``(batch, gates × units)`` pre-activations of a step. Gate order and equations are
Keras' (tf_keras ``recurrent_v2.py``): LSTM ``i, f, c, o``; GRU ``z, r, h``.

The backward kernels recompute the gate activations from the stashed pre-activations (cheap, and
the stash is then one tensor per step, as PopLibs keeps its forward intermediates), and take each
activation's derivative from its output.

Activations are integer codes (:data:`ACTIVATIONS`), so one compiled kernel serves every pair.
Every kernel is dtype-generic: it computes in the dtype of its inputs.
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel
from ipusim.kernels.elementwise import _stable_sigmoid

#: Activation name -> code understood by the kernels. ``hard_sigmoid`` is Keras 2's
#: ``clip(0.2·x + 0.5, 0, 1)`` (tf_keras ``backend.hard_sigmoid``).
ACTIVATIONS = {"linear": 0, "tanh": 1, "sigmoid": 2, "hard_sigmoid": 3, "relu": 4}


@kernel
def _act(x, code):
    if code == 1:
        return np.tanh(x)
    if code == 2:
        return _stable_sigmoid(x)
    if code == 3:
        v = 0.2 * x + 0.5
        return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)
    if code == 4:
        return 0.0 if x < 0.0 else x
    return x


@kernel
def _act_grad(y, code):
    """Derivative of the activation at the point whose output is ``y``."""
    if code == 1:
        return 1.0 - y * y
    if code == 2:
        return y * (1.0 - y)
    if code == 3:
        return 0.2 if 0.0 < y < 1.0 else 0.0
    if code == 4:
        return 1.0 if y > 0.0 else 0.0
    return 1.0


def _contiguous(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The kernels' array arguments, C-contiguous (copies only where needed)."""
    return tuple(np.ascontiguousarray(a) for a in arrays)


def _codes(activation: str, recurrent_activation: str) -> tuple[int, int]:
    """The kernels' ``act, rec`` arguments: the activations' codes."""
    return ACTIVATIONS[activation], ACTIVATIONS[recurrent_activation]


# ------------------------------------------------------------------------------------------ LSTM
# Values go through ``v`` (an array of the inputs' dtype) so that every operation rounds to
# that dtype, as TensorFlow's float32 ops do one by one; Python float literals would otherwise
# promote the arithmetic to float64.
@kernel
def _lstm_gates(z, b, j, units, act, rec, v):
    """Unit ``j`` of example ``b``: the gate activations into ``v[0:4]`` (forward and backward
    compute them alike)."""
    v[0] = _act(z[b, j], rec)  # i
    v[1] = _act(z[b, units + j], rec)  # f
    v[2] = _act(z[b, 2 * units + j], act)  # candidate
    v[3] = _act(z[b, 3 * units + j], rec)  # o


@kernel
def _lstm_fwd(z, c_prev, act, rec, h, c):
    batch, units = c_prev.shape
    v = np.empty(6, dtype=c.dtype)
    for b in range(batch):
        for j in range(units):
            _lstm_gates(z, b, j, units, act, rec, v)
            v[4] = v[1] * c_prev[b, j]
            v[5] = v[0] * v[2]
            c[b, j] = v[4] + v[5]
            v[4] = _act(c[b, j], act)
            h[b, j] = v[3] * v[4]


def lstm_cell(
    z: np.ndarray, c_prev: np.ndarray, activation: str, recurrent_activation: str
) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM step's gates: ``(h, c)`` from the pre-activations ``z`` (batch, 4·units: the
    input and recurrent products plus the bias) and the previous cell state ``c_prev``."""
    h = np.empty_like(c_prev)
    c = np.empty_like(c_prev)
    z, c_prev = _contiguous(z, c_prev)
    _lstm_fwd(z, c_prev, *_codes(activation, recurrent_activation), h, c)
    return h, c


@kernel
def _lstm_bwd(dh, dc, z, c_prev, c, act, rec, dz, dc_prev):
    batch, units = c_prev.shape
    v = np.empty(8, dtype=dz.dtype)
    for b in range(batch):
        for j in range(units):
            _lstm_gates(z, b, j, units, act, rec, v)
            v[4] = _act(c[b, j], act)
            v[5] = dh[b, j] * v[3]  # gradient at act(c)
            v[6] = _act_grad(v[4], act)
            v[7] = v[5] * v[6]
            v[5] = dc[b, j] + v[7]  # gradient at c
            v[6] = v[5] * v[2]
            v[7] = _act_grad(v[0], rec)
            dz[b, j] = v[6] * v[7]
            v[6] = v[5] * c_prev[b, j]
            v[7] = _act_grad(v[1], rec)
            dz[b, units + j] = v[6] * v[7]
            v[6] = v[5] * v[0]
            v[7] = _act_grad(v[2], act)
            dz[b, 2 * units + j] = v[6] * v[7]
            v[6] = dh[b, j] * v[4]
            v[7] = _act_grad(v[3], rec)
            dz[b, 3 * units + j] = v[6] * v[7]
            dc_prev[b, j] = v[5] * v[1]


def lstm_cell_grad(
    dh: np.ndarray,
    dc: np.ndarray,
    z: np.ndarray,
    c_prev: np.ndarray,
    c: np.ndarray,
    activation: str,
    recurrent_activation: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of :func:`lstm_cell`: ``(dz, dc_prev)`` from the gradients reaching ``h`` and
    ``c`` and the step's stash (pre-activations, previous and new cell states)."""
    dz = np.empty_like(z)
    dc_prev = np.empty_like(c_prev)
    dh, dc, z, c_prev, c = _contiguous(dh, dc, z, c_prev, c)
    _lstm_bwd(dh, dc, z, c_prev, c, *_codes(activation, recurrent_activation), dz, dc_prev)
    return dz, dc_prev


# ------------------------------------------------------------------------------------------- GRU
@kernel
def _gru_gates(xg, hg, b, j, units, act, rec, v):
    """Unit ``j`` of example ``b``: the gate activations into ``v[0:3]`` (forward and backward
    compute them alike)."""
    v[0] = xg[b, j] + hg[b, j]
    v[0] = _act(v[0], rec)  # z
    v[1] = xg[b, units + j] + hg[b, units + j]
    v[1] = _act(v[1], rec)  # r
    v[2] = v[1] * hg[b, 2 * units + j]
    v[2] = xg[b, 2 * units + j] + v[2]
    v[2] = _act(v[2], act)  # candidate


@kernel
def _gru_fwd(xg, hg, h_prev, act, rec, h):
    batch, units = h_prev.shape
    v = np.empty(6, dtype=h.dtype)
    for b in range(batch):
        for j in range(units):
            _gru_gates(xg, hg, b, j, units, act, rec, v)
            # Keras: z·h_prev + (1 − z)·candidate
            v[3] = v[0] * h_prev[b, j]
            v[4] = 1.0 - v[0]
            v[5] = v[4] * v[2]
            h[b, j] = v[3] + v[5]


def gru_cell(
    xg: np.ndarray, hg: np.ndarray, h_prev: np.ndarray, activation: str, recurrent_activation: str
) -> np.ndarray:
    """One GRU step with the reset gate after the recurrent product (Keras ``reset_after=True``):
    ``xg`` is ``x·W + b_input`` and ``hg`` is ``h_prev·U + b_recurrent``, both (batch, 3·units)
    in the order ``z, r, h``."""
    h = np.empty_like(h_prev)
    xg, hg, h_prev = _contiguous(xg, hg, h_prev)
    _gru_fwd(xg, hg, h_prev, *_codes(activation, recurrent_activation), h)
    return h


@kernel
def _gru_bwd(dh, xg, hg, h_prev, act, rec, dxg, dhg, dh_prev):
    batch, units = h_prev.shape
    v = np.empty(8, dtype=dxg.dtype)
    for b in range(batch):
        for j in range(units):
            _gru_gates(xg, hg, b, j, units, act, rec, v)
            d = dh[b, j]
            v[3] = h_prev[b, j] - v[2]
            v[3] = d * v[3]
            v[4] = _act_grad(v[0], rec)
            v[3] = v[3] * v[4]  # at z's pre-activation
            v[4] = 1.0 - v[0]
            v[4] = d * v[4]
            v[5] = _act_grad(v[2], act)
            v[4] = v[4] * v[5]  # at the candidate's pre-activation
            v[5] = v[4] * hg[b, 2 * units + j]
            v[6] = _act_grad(v[1], rec)
            v[5] = v[5] * v[6]  # at r's pre-activation
            dxg[b, j] = v[3]
            dxg[b, units + j] = v[5]
            dxg[b, 2 * units + j] = v[4]
            dhg[b, j] = v[3]
            dhg[b, units + j] = v[5]
            dhg[b, 2 * units + j] = v[4] * v[1]
            dh_prev[b, j] = d * v[0]


def gru_cell_grad(
    dh: np.ndarray,
    xg: np.ndarray,
    hg: np.ndarray,
    h_prev: np.ndarray,
    activation: str,
    recurrent_activation: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradient of :func:`gru_cell`: ``(dxg, dhg, dh_prev)``; ``dh_prev`` is only the direct
    path (``z·dh``): the path through ``hg`` is the recurrent product's gradient."""
    dxg = np.empty_like(xg)
    dhg = np.empty_like(hg)
    dh_prev = np.empty_like(h_prev)
    dh, xg, hg, h_prev = _contiguous(dh, xg, hg, h_prev)
    _gru_bwd(dh, xg, hg, h_prev, *_codes(activation, recurrent_activation), dxg, dhg, dh_prev)
    return dxg, dhg, dh_prev


# ------------------------------------------------------------------------------ time (un)stacking
def unstack(x: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """The slices of ``x`` along ``axis`` (contiguous copies, one per time step)."""
    return tuple(np.ascontiguousarray(np.take(x, t, axis=axis)) for t in range(x.shape[axis]))


def stack(values: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    """``values`` stacked along a new ``axis``."""
    return np.stack(values, axis=axis)
