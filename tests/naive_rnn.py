"""Slow, obvious float64 references for the recurrent layers (Keras 2's equations, written out).

Independent of ``ipusim.kernels.rnn``: a Python loop over time, one NumPy formula per gate, the
activations from their textbook definitions. Inputs are batch-major ``(batch, time, features)``;
weights are Keras': ``kernel (features, gates·units)``, ``recurrent_kernel (units,
gates·units)``, gate order LSTM ``i, f, c, o``, GRU ``z, r, h``.
"""

from __future__ import annotations

import numpy as np

ACTIVATIONS = {
    "linear": lambda x: x,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0),
    "relu": lambda x: np.maximum(x, 0.0),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "swish": lambda x: x / (1.0 + np.exp(-x)),
}


def _f64(*arrays):
    return [None if a is None else np.asarray(a, dtype=np.float64) for a in arrays]


def _steps(x: np.ndarray, go_backwards: bool) -> list[np.ndarray]:
    steps = [x[:, t] for t in range(x.shape[1])]
    return steps[::-1] if go_backwards else steps


def simple_rnn(x, kernel, recurrent, bias, activation="tanh", h0=None, go_backwards=False):
    """``h_t = act(x_t·W + b + h_{t-1}·U)``; returns (outputs over time, final h)."""
    x, kernel, recurrent, bias, h0 = _f64(x, kernel, recurrent, bias, h0)
    act = ACTIVATIONS[activation]
    h = np.zeros((x.shape[0], recurrent.shape[0])) if h0 is None else h0
    outs = []
    for x_t in _steps(x, go_backwards):
        h = act(x_t @ kernel + (0 if bias is None else bias) + h @ recurrent)
        outs.append(h)
    return np.stack(outs, axis=1), h


def lstm(
    x,
    kernel,
    recurrent,
    bias,
    activation="tanh",
    recurrent_activation="sigmoid",
    h0=None,
    c0=None,
    go_backwards=False,
    x_masks=None,
    h_masks=None,
):
    """Keras LSTM; returns (outputs over time, final h, final c). ``x_masks`` / ``h_masks``:
    dropout masks per gate (4 arrays shaped like ``x`` / like the state), as Keras'
    ``implementation=1`` applies them."""
    x, kernel, recurrent, bias, h0, c0 = _f64(x, kernel, recurrent, bias, h0, c0)
    act, rec = ACTIVATIONS[activation], ACTIVATIONS[recurrent_activation]
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units)) if h0 is None else h0
    c = np.zeros((x.shape[0], units)) if c0 is None else c0
    outs = []
    for t, x_t in enumerate(_steps(x, go_backwards)):
        if x_masks is None and h_masks is None:
            z = x_t @ kernel + h @ recurrent + (0 if bias is None else bias)
        else:
            xm = x_masks or [np.ones_like(x)] * 4
            hm = h_masks or [np.ones_like(h)] * 4
            cols = [slice(g * units, (g + 1) * units) for g in range(4)]
            z = np.concatenate(
                [(x_t * xm[g][:, t]) @ kernel[:, cols[g]] + (h * hm[g]) @ recurrent[:, cols[g]]
                 for g in range(4)],
                axis=1,
            ) + (0 if bias is None else bias)  # fmt: skip
        i = rec(z[:, :units])
        f = rec(z[:, units : 2 * units])
        g = act(z[:, 2 * units : 3 * units])
        o = rec(z[:, 3 * units :])
        c = f * c + i * g
        h = o * act(c)
        outs.append(h)
    return np.stack(outs, axis=1), h, c


def gru(
    x,
    kernel,
    recurrent,
    bias,
    activation="tanh",
    recurrent_activation="sigmoid",
    reset_after=True,
    h0=None,
    go_backwards=False,
):
    """Keras GRU; ``bias`` is (2, 3·units) with ``reset_after`` (input, recurrent) else (3·units,).
    Returns (outputs over time, final h)."""
    x, kernel, recurrent, bias, h0 = _f64(x, kernel, recurrent, bias, h0)
    act, rec = ACTIVATIONS[activation], ACTIVATIONS[recurrent_activation]
    units = recurrent.shape[0]
    if bias is None:
        b_in = b_rec = np.zeros(3 * units)
    elif reset_after:
        b_in, b_rec = bias[0], bias[1]
    else:
        b_in, b_rec = bias, np.zeros(3 * units)
    h = np.zeros((x.shape[0], units)) if h0 is None else h0
    outs = []
    for x_t in _steps(x, go_backwards):
        xz = x_t @ kernel + b_in
        u_z, u_r, u_h = (recurrent[:, k * units : (k + 1) * units] for k in range(3))
        if reset_after:
            inner = h @ recurrent + b_rec
            z = rec(xz[:, :units] + inner[:, :units])
            r = rec(xz[:, units : 2 * units] + inner[:, units : 2 * units])
            cand = act(xz[:, 2 * units :] + r * inner[:, 2 * units :])
        else:
            z = rec(xz[:, :units] + h @ u_z)
            r = rec(xz[:, units : 2 * units] + h @ u_r)
            cand = act(xz[:, 2 * units :] + (r * h) @ u_h)
        h = z * h + (1 - z) * cand
        outs.append(h)
    return np.stack(outs, axis=1), h
