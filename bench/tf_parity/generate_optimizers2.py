"""Write bench/tf_parity/fixtures/optimizers2.npz: Keras references for the optimizers and
learning-rate schedules that generate.py does not cover.

Run it in the TensorFlow environment (see generate.py)::

    /work/tfvenv/bin/python bench/tf_parity/generate_optimizers2.py

Cases, read by tests/numerics/test_tf_parity_optimizers2.py:

* ``<optimizer case>``: as generate.py's optimizer group (20 updates of two float32 variables
  from a fixed gradient sequence, ``keras.optimizers.legacy``, i.e. Keras 2 ``optimizer_v2`` as
  in IPU TensorFlow), for Adadelta, Adamax, Nadam and Ftrl with default and non-default
  arguments, plus the trajectory of a schedule-driven SGD, and of the tf-keras 2.11+ optimizers
  AdamW, Lion and Adafactor (``keras.optimizers``, meta ``"new": true``).
* ``schedule_<name>``: the learning rate of every schedule at steps 0..39 (``rates``), for each
  ``keras.optimizers.schedules`` class.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from generate import OPTIMIZER_STEPS, Cases, _rng, keras  # noqa: E402

OPTIMIZER_CASES = [
    ("adadelta", "Adadelta", {}),
    ("adadelta_lr1_rho09", "Adadelta", {"learning_rate": 1.0, "rho": 0.9, "epsilon": 1e-6}),
    ("adamax", "Adamax", {}),
    ("adamax_betas", "Adamax", {"learning_rate": 0.01, "beta_1": 0.8, "beta_2": 0.99}),
    ("nadam", "Nadam", {}),
    ("nadam_lr_betas", "Nadam", {"learning_rate": 0.01, "beta_1": 0.85, "beta_2": 0.995}),
    ("ftrl", "Ftrl", {}),
    (
        "ftrl_l1_l2",
        "Ftrl",
        {
            "learning_rate": 0.1,
            "l1_regularization_strength": 0.01,
            "l2_regularization_strength": 0.02,
        },
    ),
    ("ftrl_power_beta", "Ftrl", {"learning_rate": 0.05, "learning_rate_power": -0.3, "beta": 0.5}),
    (
        "ftrl_shrinkage",
        "Ftrl",
        {"learning_rate": 0.1, "l2_shrinkage_regularization_strength": 0.05},
    ),
    ("adamax_clipnorm_decay", "Adamax", {"clipnorm": 0.5, "decay": 0.05}),
    ("adadelta_decay", "Adadelta", {"learning_rate": 0.5, "decay": 0.1}),
]

#: tf-keras 2.11+ optimizers without a legacy (optimizer_v2) form, from ``keras.optimizers``;
#: jit_compile=False so TensorFlow runs the update's ops as written (no XLA fusion).
NEW_OPTIMIZER_CASES = [
    ("adamw", "AdamW", {"jit_compile": False}),
    (
        "adamw_amsgrad_wd",
        "AdamW",
        {"learning_rate": 0.01, "weight_decay": 0.1, "amsgrad": True, "jit_compile": False},
    ),
    ("lion", "Lion", {"jit_compile": False}),
    (
        "lion_wd",
        "Lion",
        {"learning_rate": 0.001, "beta_1": 0.8, "weight_decay": 0.05, "jit_compile": False},
    ),
    ("adafactor", "Adafactor", {"jit_compile": False}),
    (
        "adafactor_fixed_lr",
        "Adafactor",
        {
            "learning_rate": 0.05,
            "relative_step": False,
            "clip_threshold": 0.5,
            "jit_compile": False,
        },
    ),
]

#: float16 variables (and gradients): TensorFlow updates them in half precision.
HALF_OPTIMIZER_CASES = [
    ("adadelta_half", "Adadelta", {"learning_rate": 1.0}),
    ("adamax_half", "Adamax", {"learning_rate": 0.01}),
    ("nadam_half", "Nadam", {"learning_rate": 0.01}),
    ("ftrl_half", "Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01}),
    (
        "ftrl_half_power_shrinkage",
        "Ftrl",
        {
            "learning_rate": 0.1,
            "learning_rate_power": -0.3,
            "l2_shrinkage_regularization_strength": 0.05,
            "beta": 0.5,
        },
    ),
]

NEW_HALF_OPTIMIZER_CASES = [
    ("adamw_half", "AdamW", {"learning_rate": 0.01, "weight_decay": 0.1, "jit_compile": False}),
    ("lion_half", "Lion", {"learning_rate": 0.001, "weight_decay": 0.05, "jit_compile": False}),
]

SCHEDULE_CASES = [
    (
        "exponential",
        "ExponentialDecay",
        {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.5},
    ),
    (
        "exponential_staircase",
        "ExponentialDecay",
        {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.5, "staircase": True},
    ),
    (
        "piecewise",
        "PiecewiseConstantDecay",
        {"boundaries": [5, 12, 30], "values": [1.0, 0.5, 0.1, 0.01]},
    ),
    (
        "inverse_time",
        "InverseTimeDecay",
        {"initial_learning_rate": 0.1, "decay_steps": 4, "decay_rate": 0.3},
    ),
    (
        "inverse_time_staircase",
        "InverseTimeDecay",
        {"initial_learning_rate": 0.1, "decay_steps": 4, "decay_rate": 0.3, "staircase": True},
    ),
    (
        "polynomial",
        "PolynomialDecay",
        {"initial_learning_rate": 0.1, "decay_steps": 25, "end_learning_rate": 0.001, "power": 2.0},
    ),
    (
        "polynomial_cycle",
        "PolynomialDecay",
        {
            "initial_learning_rate": 0.1,
            "decay_steps": 9,
            "end_learning_rate": 0.01,
            "power": 0.5,
            "cycle": True,
        },
    ),
    ("cosine", "CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 30, "alpha": 0.1}),
    (
        "cosine_warmup",
        "CosineDecay",
        {
            "initial_learning_rate": 0.0,
            "decay_steps": 20,
            "alpha": 0.05,
            "warmup_target": 0.2,
            "warmup_steps": 10,
        },
    ),
    (
        "cosine_restarts",
        "CosineDecayRestarts",
        {"initial_learning_rate": 0.1, "first_decay_steps": 5},
    ),
    (
        "cosine_restarts_mul",
        "CosineDecayRestarts",
        {
            "initial_learning_rate": 0.1,
            "first_decay_steps": 4,
            "t_mul": 1.0,
            "m_mul": 0.7,
            "alpha": 0.2,
        },
    ),
    (
        "cosine_restarts_tmul3",
        "CosineDecayRestarts",
        {"initial_learning_rate": 0.1, "first_decay_steps": 3, "t_mul": 3.0, "m_mul": 0.5},
    ),
]
SCHEDULE_STEPS = 40

#: An SGD whose learning rate is a schedule: checks that the optimizer calls it with the step.
SCHEDULED_SGD = (
    "sgd_cosine_restarts",
    "CosineDecayRestarts",
    {"initial_learning_rate": 0.5, "first_decay_steps": 6, "m_mul": 0.8},
)


def _trajectory(name: str, make_optimizer, dtype=np.float32) -> dict[str, np.ndarray]:
    rng = _rng("optimizer2/" + name)
    inits = [
        rng.standard_normal((7, 5)).astype(dtype),
        rng.standard_normal(3).astype(dtype),
    ]
    grads = [
        [(rng.standard_normal(v.shape) * 10.0 ** rng.uniform(-2, 0.5)).astype(dtype) for v in inits]
        for _ in range(OPTIMIZER_STEPS)
    ]
    variables = [tf.Variable(v) for v in inits]
    opt = make_optimizer()
    trajectory = [[] for _ in inits]
    for step_grads in grads:
        opt.apply_gradients(zip([tf.constant(g) for g in step_grads], variables))
        for i, v in enumerate(variables):
            trajectory[i].append(v.numpy())
    arrays = {}
    for i, init in enumerate(inits):
        arrays[f"init{i}"] = init
        arrays[f"grads{i}"] = np.stack([g[i] for g in grads])
        arrays[f"values{i}"] = np.stack(trajectory[i])
    if hasattr(opt, "get_weights"):  # the legacy optimizers' [iterations, slots...]
        arrays["weights"] = np.concatenate(
            [np.asarray(w, np.float64).reshape(-1) for w in opt.get_weights()]
        )
    return arrays


def main() -> None:
    cases = Cases()
    for name, cls, config in OPTIMIZER_CASES:
        arrays = _trajectory(name, lambda: getattr(keras.optimizers.legacy, cls)(**config))
        cases.add(name, {"class": cls, "config": config}, **arrays)
    for name, cls, config in HALF_OPTIMIZER_CASES:
        make = lambda: getattr(keras.optimizers.legacy, cls)(**config)  # noqa: E731
        arrays = _trajectory(name, make, np.float16)
        cases.add(name, {"class": cls, "config": config, "dtype": "float16"}, **arrays)
    for name, cls, config in NEW_OPTIMIZER_CASES:
        arrays = _trajectory(name, lambda: getattr(keras.optimizers, cls)(**config))
        cases.add(name, {"class": cls, "config": config, "new": True}, **arrays)
    for name, cls, config in NEW_HALF_OPTIMIZER_CASES:
        make = lambda: getattr(keras.optimizers, cls)(**config)  # noqa: E731
        arrays = _trajectory(name, make, np.float16)
        meta = {"class": cls, "config": config, "new": True, "dtype": "float16"}
        cases.add(name, meta, **arrays)
    name, schedule_cls, schedule_config = SCHEDULED_SGD
    arrays = _trajectory(
        name,
        lambda: keras.optimizers.legacy.SGD(
            getattr(keras.optimizers.schedules, schedule_cls)(**schedule_config)
        ),
    )
    meta = {"class": "SGD", "config": {}, "schedule": [schedule_cls, schedule_config]}
    cases.add(name, meta, **arrays)
    for name, cls, config in SCHEDULE_CASES:
        schedule = getattr(keras.optimizers.schedules, cls)(**config)
        rates = np.array([float(schedule(step)) for step in range(SCHEDULE_STEPS)])
        cases.add(f"schedule_{name}", {"class": cls, "config": config}, rates=rates)
    cases.write("optimizers2.npz")


if __name__ == "__main__":
    main()
