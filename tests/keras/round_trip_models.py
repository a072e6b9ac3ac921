"""Drawn models for the round-trip properties (saving and serving), built like the property runs'.

The model kinds (Sequential, functional, subclassed), the hidden widths, the optional
BatchNormalization after the first layer, the precisions, the feature and class counts are those of
``tests/integration/test_property_runs.py`` (imported from there); added here are what a saved file
must carry besides: an Embedding of a vocabulary above 2048 fed integer ids (fp16 represents
integers exactly only up to 2048), every optimizer with slots, loss scaling (dynamic and fixed)
and the mixed_float16 policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ipusim import keras
from tests.integration.test_property_runs import CLASSES, FEATURES, PRECISIONS

__all__ = [
    "CLASSES",
    "FEATURES",
    "OPTIMIZERS",
    "PRECISIONS",
    "VOCAB",
    "Case",
    "Stack",
    "build_model",
    "cases",
    "data",
    "make_optimizer",
]

#: Embedding rows: ids up to 4999, most of them above 2048.
VOCAB = 5000

#: Every optimizer with slots (and plain SGD, which has none), each with its slot-making options.
OPTIMIZERS: dict[str, Any] = {
    "SGD": lambda: keras.optimizers.SGD(0.05),
    "SGD-momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "RMSprop": lambda: keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "Adam": lambda: keras.optimizers.Adam(0.01),
    "Adam-amsgrad": lambda: keras.optimizers.Adam(0.01, amsgrad=True),
    "AdamW": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.01),
    "Adagrad": lambda: keras.optimizers.Adagrad(0.05),
    "Adadelta": lambda: keras.optimizers.Adadelta(1.0),
    "Adamax": lambda: keras.optimizers.Adamax(0.01),
    "Nadam": lambda: keras.optimizers.Nadam(0.01),
    "Ftrl": lambda: keras.optimizers.Ftrl(0.05),
    "Lion": lambda: keras.optimizers.Lion(0.001),
    "Adafactor": lambda: keras.optimizers.Adafactor(0.01),
    "SGDIpuOptimizer": lambda: keras.optimizers.SGDIpuOptimizer(0.05, momentum=0.9),
    "AdamIpuOptimizer": lambda: keras.optimizers.AdamIpuOptimizer(0.01),
    "LAMBIpuOptimizer": lambda: keras.optimizers.LAMBIpuOptimizer(0.01),
}


@dataclass(frozen=True)
class Case:
    """One drawn model and the state it is saved in."""

    kind: str  # "sequential" | "functional" | "subclassed"
    declared_input: bool  # Sequential: a keras.Input (else built from a shape)
    embedding: bool  # integer ids into an Embedding(VOCAB, 4) + Flatten first
    widths: tuple[int, ...]  # hidden Dense widths (relu)
    norm: bool  # a BatchNormalization after the first layer
    optimizer: str  # a key of OPTIMIZERS
    loss_scale: str  # "none" | "dynamic" | "fixed"
    mixed: bool  # the mixed_float16 policy
    precision: str  # IPUConfig.ipusim.precision
    batch: int
    steps: int  # training steps before saving (0: the optimizer has no slots yet)


@st.composite
def cases(draw: Any) -> Case:
    hidden = draw(st.integers(0, 3))
    return Case(
        kind=draw(st.sampled_from(["sequential", "functional", "subclassed"])),
        declared_input=draw(st.booleans()),
        embedding=draw(st.booleans()),
        widths=tuple(draw(st.sampled_from([2, 4, 8])) for _ in range(hidden)),
        norm=draw(st.booleans()),
        optimizer=draw(st.sampled_from(sorted(OPTIMIZERS))),
        loss_scale=draw(st.sampled_from(["none", "dynamic", "fixed"])),
        mixed=draw(st.booleans()),
        precision=draw(st.sampled_from(PRECISIONS)),
        batch=draw(st.sampled_from([2, 4])),
        steps=draw(st.sampled_from([0, 1, 3])),
    )


def _layers(embedding: bool, widths: tuple[int, ...], norm: bool) -> list[keras.layers.Layer]:
    stack: list[keras.layers.Layer] = []
    if embedding:
        stack += [keras.layers.Embedding(VOCAB, 4), keras.layers.Flatten()]
    stack += [keras.layers.Dense(w, activation="relu") for w in widths]
    stack.append(keras.layers.Dense(CLASSES))
    if norm:
        stack.insert(1, keras.layers.BatchNormalization())
    return stack


class Stack(keras.Model):
    """The subclassed kind: the same layers, rebuilt from its config."""

    def __init__(
        self, embedding: bool, widths: list[int], norm: bool, name: str | None = None
    ) -> None:
        super().__init__(name=name)
        self.embedding, self.widths, self.norm = embedding, list(widths), norm
        self.blocks = _layers(embedding, tuple(widths), norm)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        x = inputs
        for layer in self.blocks:
            x = layer(x, training=training) if layer._call_accepts_training else layer(x)
        return x

    def get_config(self) -> dict[str, Any]:
        return {
            "embedding": self.embedding,
            "widths": self.widths,
            "norm": self.norm,
            "name": self.name,
        }


def _input_spec(c: Case) -> tuple[tuple[int | None, ...], str]:
    return ((None, FEATURES), "int32" if c.embedding else "float32")


def build_model(c: Case, batch_size: int | None = None) -> keras.Model:
    """The drawn model, built (``batch_size`` fixes the inputs' batch dimension)."""
    shape, dtype = _input_spec(c)
    if c.kind == "sequential":
        model = keras.Sequential(_layers(c.embedding, c.widths, c.norm))
        if c.declared_input or batch_size is not None:
            model = keras.Sequential(
                [
                    keras.Input(shape[1:], batch_size=batch_size, dtype=dtype),
                    *_layers(c.embedding, c.widths, c.norm),
                ]
            )
        else:
            model.build(shape)
        return model
    if c.kind == "functional":
        inputs = keras.Input(shape[1:], batch_size=batch_size, dtype=dtype)
        x = inputs
        for layer in _layers(c.embedding, c.widths, c.norm):
            x = layer(x)
        return keras.Model(inputs, x)
    model = Stack(c.embedding, list(c.widths), c.norm)
    model.build(keras.Input(shape[1:], batch_size=batch_size, dtype=dtype))
    return model


def make_optimizer(c: Case) -> keras.optimizers.Optimizer:
    inner = OPTIMIZERS[c.optimizer]()
    if c.loss_scale == "dynamic":  # grows every 2 finite steps, so the saved scale has moved
        return keras.mixed_precision.LossScaleOptimizer(inner, dynamic_growth_steps=2)
    if c.loss_scale == "fixed":
        return keras.mixed_precision.LossScaleOptimizer(inner, dynamic=False, initial_scale=64.0)
    return inner


def data(c: Case, samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (ids in [0, VOCAB) for an Embedding, else normal floats) and class labels."""
    rng = np.random.default_rng(seed)
    if c.embedding:
        x = rng.integers(0, VOCAB, size=(samples, FEATURES)).astype(np.int32)
    else:
        x = rng.normal(size=(samples, FEATURES)).astype(np.float32)
    return x, rng.integers(0, CLASSES, samples).astype(np.int32)
