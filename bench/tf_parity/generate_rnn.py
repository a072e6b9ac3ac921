"""Write the TensorFlow Keras reference fixture of the recurrent layers (``fixtures/rnn.npz``).

Run in the separate TensorFlow environment (tensorflow-cpu and tf-keras, Keras 2 as IPU
TensorFlow has; never a dependency of ipusim or of its tests)::

    /work/tfvenv/bin/python bench/tf_parity/generate_rnn.py

tests/numerics/test_rnn_parity.py reads it. Cases ``<case>/<array>`` plus ``<case>/meta`` (JSON as
uint8 bytes), as generate.py writes its groups:

* ``layer/...``: SimpleRNN, LSTM, GRU and Bidirectional with their main argument variants:
  inputs ``x0`` (and initial states ``x1``, ``x2`` where given), weights ``w<i>`` (drawn here),
  outputs ``y<i>`` with the cotangents ``dy<i>``, and the gradients of ``sum_i sum(y_i * dy_i)``
  w.r.t. the float inputs (``dx<i>``) and every trainable weight (``dw<i>``).
* ``training/lstm_<optimizer>``: 64 ``train_on_batch`` steps of a small LSTM classifier from
  stored initial weights and batches (SGD with momentum, and Adam; sparse cross-entropy on
  logits): the loss of every step and the final weights.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

OUT = Path(__file__).resolve().parent / "fixtures" / "rnn.npz"
BATCH, STEPS, FEATURES, UNITS = 3, 5, 4, 3

#: (case, layer class, config, wrapper config or None, time_major input, initial states).
LAYER_CASES = [
    ("simple_rnn", "SimpleRNN", {}, None, False, 0),
    ("simple_rnn/sequences", "SimpleRNN", {"return_sequences": True}, None, False, 0),
    (
        "simple_rnn/backwards",
        "SimpleRNN",
        {"go_backwards": True, "return_sequences": True},
        None,
        False,
        0,
    ),
    (
        "simple_rnn/state_relu",
        "SimpleRNN",
        {"return_state": True, "activation": "relu"},
        None,
        False,
        0,
    ),
    ("simple_rnn/no_bias", "SimpleRNN", {"use_bias": False}, None, False, 0),
    ("lstm", "LSTM", {}, None, False, 0),
    ("lstm/sequences", "LSTM", {"return_sequences": True}, None, False, 0),
    ("lstm/state", "LSTM", {"return_state": True}, None, False, 0),
    (
        "lstm/sequences_state",
        "LSTM",
        {"return_sequences": True, "return_state": True},
        None,
        False,
        0,
    ),
    ("lstm/backwards", "LSTM", {"go_backwards": True, "return_sequences": True}, None, False, 0),
    ("lstm/hard_sigmoid", "LSTM", {"recurrent_activation": "hard_sigmoid"}, None, False, 0),
    ("lstm/relu", "LSTM", {"activation": "relu", "return_sequences": True}, None, False, 0),
    ("lstm/no_bias", "LSTM", {"use_bias": False}, None, False, 0),
    ("lstm/time_major", "LSTM", {"time_major": True, "return_sequences": True}, None, True, 0),
    ("lstm/initial_state", "LSTM", {"return_state": True}, None, False, 2),
    ("gru", "GRU", {}, None, False, 0),
    ("gru/sequences", "GRU", {"return_sequences": True}, None, False, 0),
    ("gru/state", "GRU", {"return_state": True}, None, False, 0),
    ("gru/backwards", "GRU", {"go_backwards": True, "return_sequences": True}, None, False, 0),
    ("gru/reset_before", "GRU", {"reset_after": False}, None, False, 0),
    (
        "gru/reset_before_sequences",
        "GRU",
        {"reset_after": False, "return_sequences": True},
        None,
        False,
        0,
    ),
    ("gru/hard_sigmoid", "GRU", {"recurrent_activation": "hard_sigmoid"}, None, False, 0),
    ("gru/no_bias", "GRU", {"use_bias": False}, None, False, 0),
    ("gru/initial_state", "GRU", {"return_sequences": True}, None, False, 1),
    (
        "bidirectional/concat",
        "LSTM",
        {"return_sequences": True},
        {"merge_mode": "concat"},
        False,
        0,
    ),
    ("bidirectional/sum", "LSTM", {"return_sequences": True}, {"merge_mode": "sum"}, False, 0),
    ("bidirectional/mul", "GRU", {}, {"merge_mode": "mul"}, False, 0),
    ("bidirectional/ave", "SimpleRNN", {"return_sequences": True}, {"merge_mode": "ave"}, False, 0),
    ("bidirectional/none", "LSTM", {}, {"merge_mode": None}, False, 0),
    ("bidirectional/state", "GRU", {"return_state": True}, {"merge_mode": "concat"}, False, 0),
    (
        "bidirectional/backward_layer",
        "LSTM",
        {"return_sequences": True},
        {
            "merge_mode": "concat",
            "backward_layer": {
                "class": "GRU",
                "config": {"units": 2, "return_sequences": True, "go_backwards": True},
            },
        },
        False,
        0,
    ),
]


#: RNN(cell) cases: (case, cell class, cell config, RNN config).
CELL_CASES = [
    ("rnn/simple_rnn_cell", "SimpleRNNCell", {}, {"return_sequences": True}),
    ("rnn/lstm_cell", "LSTMCell", {}, {"return_state": True}),
    ("rnn/gru_cell", "GRUCell", {}, {"return_sequences": True, "go_backwards": True}),
    ("rnn/gru_cell_reset_before", "GRUCell", {"reset_after": False}, {}),
    ("rnn/stacked_cells", "LSTMCell,GRUCell", {}, {"return_sequences": True, "return_state": True}),
]


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _layer(cls: str, config: dict, wrapper: dict | None) -> keras.layers.Layer:
    if wrapper is not None and "cell" in wrapper:
        cells = [getattr(keras.layers, c)(UNITS, **config) for c in cls.split(",")]
        return keras.layers.RNN(cells if len(cells) > 1 else cells[0], **wrapper["rnn"])
    layer = getattr(keras.layers, cls)(UNITS, **config)
    if wrapper is None:
        return layer
    options = dict(wrapper)
    backward = options.pop("backward_layer", None)
    if backward is not None:
        options["backward_layer"] = getattr(keras.layers, backward["class"])(**backward["config"])
    return keras.layers.Bidirectional(layer, **options)


def _layer_case(cases: dict, name, cls, config, wrapper, time_major, states) -> None:
    rng = _rng(name)
    x_shape = (STEPS, BATCH, FEATURES) if time_major else (BATCH, STEPS, FEATURES)
    xs = [rng.standard_normal(x_shape).astype(np.float32)]
    xs += [rng.standard_normal((BATCH, UNITS)).astype(np.float32) for _ in range(states)]
    layer = _layer(cls, config, wrapper)
    tensors = [tf.constant(x) for x in xs]

    def call():
        if states:
            return layer(tensors[0], initial_state=tensors[1:])
        return layer(tensors[0])

    call()  # build
    weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in layer.weights]
    layer.set_weights(weights)
    with tf.GradientTape(persistent=True) as tape:
        for t in tensors:
            tape.watch(t)
        ys = call()
        ys = tf.nest.flatten(ys)  # stacked cells return their states nested per cell
        dys = [rng.standard_normal(y.shape).astype(np.float32) for y in ys]
        objective = tf.add_n([tf.reduce_sum(y * dy) for y, dy in zip(ys, dys)])
    arrays = {}
    for i, (y, dy) in enumerate(zip(ys, dys)):
        arrays[f"y{i}"], arrays[f"dy{i}"] = y.numpy(), dy
    for i, (x, t) in enumerate(zip(xs, tensors)):
        arrays[f"x{i}"] = x
        arrays[f"dx{i}"] = tape.gradient(objective, t).numpy()
    for i, w in enumerate(weights):
        arrays[f"w{i}"] = w
    for i, v in enumerate(layer.trainable_weights):
        arrays[f"dw{i}"] = tf.convert_to_tensor(tape.gradient(objective, v)).numpy()
    meta = {
        "class": cls,
        "config": {"units": UNITS, **config},
        "wrapper": wrapper,
        "states": states,
        "outputs": len(ys),
    }
    _add(cases, f"layer/{name}", meta, arrays)


def _add(cases: dict, name: str, meta: dict, arrays: dict) -> None:
    cases[f"{name}/meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    for key, value in arrays.items():
        cases[f"{name}/{key}"] = np.asarray(value)


#: Stateful layers: (case, class, config); two consecutive batches, then after reset_states.
STATEFUL_CASES = [
    ("stateful/lstm", "LSTM", {"return_sequences": True}),
    ("stateful/gru", "GRU", {}),
    ("stateful/simple_rnn_time_major", "SimpleRNN", {"time_major": True}),
]


def _stateful_case(cases: dict, name: str, cls: str, config: dict) -> None:
    rng = _rng(name)
    time_major = config.get("time_major", False)
    shape = (STEPS, BATCH, FEATURES) if time_major else (BATCH, STEPS, FEATURES)
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
    layer = getattr(keras.layers, cls)(UNITS, stateful=True, **config)
    layer(tf.constant(xs[0]))  # build
    weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in layer.weights]
    layer.set_weights(weights)
    layer.reset_states()
    arrays = {"x0": xs[0], "x1": xs[1]}
    arrays["y0"] = layer(tf.constant(xs[0])).numpy()
    arrays["y1"] = layer(tf.constant(xs[1])).numpy()  # starts from the state x0 left
    layer.reset_states()
    arrays["y2"] = layer(tf.constant(xs[1])).numpy()  # from zero states again
    arrays.update({f"w{i}": w for i, w in enumerate(weights)})
    _add(
        cases, name, {"class": cls, "config": {"units": UNITS, "stateful": True, **config}}, arrays
    )


#: The training check: an LSTM classifier, 64 steps of batches of 8 sequences.
TRAIN = {"steps": 64, "batch": 8, "timesteps": 6, "features": 4, "units": 8, "classes": 3}


def training_model(keras_module, cfg: dict = TRAIN):
    """The model of the training check, for either Keras (also built by the test)."""
    return keras_module.Sequential(
        [
            keras_module.layers.LSTM(cfg["units"], input_shape=(cfg["timesteps"], cfg["features"])),
            keras_module.layers.Dense(cfg["classes"]),
        ]
    )


#: Optimizers of the training check: (case, class, config).
OPTIMIZERS = [
    ("training/lstm_sgd", "SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    ("training/lstm_adam", "Adam", {"learning_rate": 0.01}),
]


def optimizer_class(name: str):
    """The Keras optimizer IPU TensorFlow 2 has: tf_keras' ``optimizers.legacy`` (OptimizerV2).

    IPU TensorFlow 2's Keras (2.6) is OptimizerV2, whose Adam is ``ResourceApplyAdam``: ``1 -
    beta`` in the variable's precision from the float32-rounded beta. tf_keras 2.11+'s default
    ``optimizers.Adam`` computes ``1 - beta`` in Python double instead: ``1 - 0.999`` then differs
    by 1.3e-5 relative from float32's ``1 - 0.999f``, which moved 64 LSTM training steps by
    1.3e-5 (bench/tf_parity/lstm_drift.py measures it).
    """
    return getattr(keras.optimizers.legacy, name)


def _training(cases: dict, name: str, optimizer: str, config: dict) -> None:
    rng = _rng("training/lstm")
    cfg = TRAIN
    model = training_model(keras)
    initial = [rng.uniform(-0.4, 0.4, w.shape).astype(np.float32) for w in model.weights]
    model.set_weights(initial)
    model.compile(
        optimizer_class(optimizer)(**config),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    count = cfg["steps"] * cfg["batch"]
    x = rng.standard_normal((count, cfg["timesteps"], cfg["features"])).astype(np.float32)
    # Labels a model can learn: the class of the sign pattern of the first feature's mean.
    y = (np.digitize(x[:, :, 0].mean(axis=1), [-0.2, 0.2])).astype(np.int32)
    losses = []
    for s in range(cfg["steps"]):
        part = slice(s * cfg["batch"], (s + 1) * cfg["batch"])
        losses.append(float(model.train_on_batch(x[part], y[part])))
    arrays = {"x": x, "y": y, "losses": np.array(losses)}
    arrays.update({f"initial{i}": w for i, w in enumerate(initial)})
    arrays.update({f"final{i}": w for i, w in enumerate(model.get_weights())})
    _add(cases, name, {**cfg, "optimizer": optimizer, "config": config}, arrays)


def main() -> None:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cases: dict[str, np.ndarray] = {}
    for case in LAYER_CASES:
        _layer_case(cases, *case)
    for name, cell, config, rnn in CELL_CASES:
        _layer_case(cases, name, cell, config, {"cell": True, "rnn": rnn}, False, 0)
    for case in STATEFUL_CASES:
        _stateful_case(cases, *case)
    for case in OPTIMIZERS:
        _training(cases, *case)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **cases)
    tmp.replace(OUT)
    print(f"wrote {OUT} ({len(LAYER_CASES)} layer cases, {len(OPTIMIZERS)} training cases)")


if __name__ == "__main__":
    main()
