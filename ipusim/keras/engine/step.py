"""Step programs: a model traced for fixed specs with loss, gradients and state updates attached.

A :class:`StepProgram` is what one ``fit``/``evaluate``/``predict`` step executes: the op graph
(forward; for training also loss, backward and state updates) and the executor that runs it. The
timing path lowers the same graph, so what is timed is exactly what is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError
from ipusim.graph.autodiff import gradients
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.graph.ops.update import add_update
from ipusim.graph.spec import TensorSpec
from ipusim.graph.variable import Variable
from ipusim.keras.engine.captures import captured
from ipusim.keras.engine.nest import flatten, map_structure

KINDS = ("train", "test", "predict")


@dataclass
class StepResult:
    """What one step returns (arrays)."""

    loss: float | None
    predictions: list[np.ndarray]
    gradients: list[np.ndarray] = field(default_factory=list)
    updates: list[np.ndarray] = field(default_factory=list)
    #: Gradients captured by keras.ipu.layers, by tag (train steps only).
    captured: dict[str, np.ndarray] = field(default_factory=dict)


class StepProgram:
    """The traced graph and executor of one kind of step for fixed input specs.

    Args:
        model: the model.
        kind: ``"train"``, ``"test"`` or ``"predict"``.
        x_spec: structure of TensorSpecs of the model inputs (batch included).
        y_spec: structure of TensorSpecs of the targets (train/test), or None.
        sample_weight_spec: TensorSpec of per-example weights, or None.
    """

    def __init__(
        self,
        model: Any,
        kind: str,
        x_spec: Any,
        y_spec: Any = None,
        sample_weight_spec: TensorSpec | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ConfigurationError(f"step kind must be one of {KINDS}, received {kind!r}")
        self.kind = kind
        #: The specs traced (the advice traces the step again at another batch from them).
        self.specs = (x_spec, y_spec, sample_weight_spec)
        self.trace = model.trace(x_spec, training=kind == "train")
        graph = self.trace.graph
        self.graph = graph
        self.outputs: list[Symbol] = flatten(self.trace.outputs)
        feeds = flatten(self.trace.inputs)
        self.loss: Symbol | None = None
        self.trainable: list[Variable] = []
        self.gradients: list[Symbol] = []
        self.captured: list[tuple[str, Symbol]] = []
        self.updates: list[tuple[Variable, Symbol]] = []
        #: The last update node (``apply_gradients``) of a train step (:func:`add_update`).
        self.update: Symbol | None = None
        fetches = list(self.outputs)
        if kind in ("train", "test"):
            if y_spec is None:
                raise InputDataError(
                    "no targets were given: pass `y` (or a dataset yielding (x, y) pairs) "
                    "to train or evaluate a model with a loss"
                )
            y = map_structure(lambda s: graph.placeholder(s, "y_true"), y_spec)
            sw = (
                graph.placeholder(sample_weight_spec, "sample_weight")
                if sample_weight_spec is not None
                else None
            )
            feeds += flatten(y) + ([sw] if sw is not None else [])
            with graph.phase("loss"):
                self.loss = model._loss_symbol(y, self.trace.outputs, sw)
            fetches.insert(0, self.loss)
        if kind == "train":
            fetches += self._train(model, graph)
        else:  # inference steps carry the states their layers update (a stateful RNN's)
            self.updates = list(graph.updates)
            fetches += [value for _, value in self.updates]
        self.feeds = feeds
        # Enqueues layers made off the data path run at every step, after everything else.
        self._effects = len(graph.side_effects)
        self.executor = Executor(graph, fetches + list(graph.side_effects), feeds)

    def _train(self, model: Any, graph: Any) -> list[Symbol]:
        """Differentiate the loss (scaled by a loss-scale optimizer's scale, the gradients
        unscaled unless it unscales them itself) and add the update phase; the fetches this
        adds (gradients, state updates, captured gradients)."""
        assert self.loss is not None  # a train step has a loss (checked by the caller)
        read = {id(v): v for v in graph.variables}
        self.trainable = [v for v in model.trainable_weights if id(v) in read]
        if not self.trainable:
            raise ConfigurationError(
                f"model {model.name!r} has no trainable weights that affect the "
                "loss, so there is nothing to train"
            )
        sources = [graph.read_variable(v) for v in self.trainable]
        scaler = getattr(model.optimizer, "loss_scale_variable", None)
        target = self.loss
        if scaler is not None:  # LossScaleOptimizer: differentiate loss * scale
            with graph.phase("loss"):
                scale = graph.read_variable(scaler)
                target = m.multiply(self.loss, m.cast(scale, self.loss.dtype))
        grads = self._differentiate(graph, target, sources)
        for variable, grad in zip(self.trainable, grads):
            if grad is None:
                raise ConfigurationError(
                    f"No gradient exists for variable {variable.name!r}: the loss does not "
                    "depend on it. Freeze it (trainable=False) or use it in the model."
                )
        # ... then multiply each gradient by 1 / scale, unless the optimizer unscales them
        # itself (automatic loss scaling keeps statistics of the scaled gradients first).
        if scaler is not None and not getattr(model.optimizer, "unscales_own_gradients", False):
            with graph.phase("bwd"):
                inverse = m.divide(1.0, scale)
                grads = [m.multiply(g, m.cast(inverse, g.dtype)) for g in grads]
        self.gradients = list(grads)
        # The update phase as graph ops owned by the optimizer: lowering times the all-reduce,
        # accumulation and weight update from these nodes, and fit executes them on every
        # replica's fetched gradients (run_update), so they are not fetched here.
        with graph.phase("update"):
            self.update = add_update(self.gradients, self.trainable, model.optimizer)
        self.updates = list(graph.updates)
        updates = [value for _, value in self.updates]
        return self.gradients + updates + [g for _, g in self.captured]

    def _differentiate(self, graph: Any, target: Symbol, sources: list[Symbol]) -> list[Any]:
        """Gradients of ``target`` w.r.t. ``sources``; also sets :attr:`captured` to the
        gradients of the tensors capturing layers registered (``keras.ipu.layers``)."""
        tensors = [(t, s) for t, s in captured(graph) if s.dtype.startswith("float")]
        grads = gradients(target, sources + [s for _, s in tensors])
        extra = grads[len(sources) :]
        self.captured = [(t, g) for (t, _), g in zip(tensors, extra) if g is not None]
        return grads[: len(sources)]

    def run(self, arrays: list[np.ndarray], ctx: ExecContext) -> StepResult:
        """Execute once on flat input arrays (x, then y, then sample weights)."""
        values = self.executor.run(arrays, ctx)
        if self._effects:
            values = values[: -self._effects]
        n_out = len(self.outputs)
        if self.kind == "predict":
            return StepResult(None, values[:n_out], updates=values[n_out:])
        loss = float(values[0])
        predictions = values[1 : 1 + n_out]
        if self.kind == "test":
            return StepResult(loss, predictions, updates=values[1 + n_out :])
        n_grad = len(self.gradients)
        grads = values[1 + n_out : 1 + n_out + n_grad]
        start = 1 + n_out + n_grad
        updates = values[start : start + len(self.updates)]
        captured = values[start + len(self.updates) :]
        grabbed = {tag: value for (tag, _), value in zip(self.captured, captured, strict=True)}
        return StepResult(loss, predictions, grads, updates, grabbed)
