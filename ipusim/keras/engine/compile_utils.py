"""What ``compile()`` configures: the loss of each output and the metrics reported in the logs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.graph.graph import Symbol
from ipusim.graph.ops import math as m
from ipusim.keras import losses as losses_module
from ipusim.keras import metrics as metrics_module
from ipusim.keras.engine.nest import flatten


def _per_output(value: Any, output_names: list[str], what: str) -> list[Any]:
    """Expand a single value, list or dict (keyed by output name) to one entry per output."""
    n = len(output_names)
    if isinstance(value, dict):
        unknown = set(value) - set(output_names)
        if unknown:
            raise ValueError(
                f"compile: `{what}` has keys {sorted(unknown)} that are not output "
                f"names; the outputs are {output_names}"
            )
        return [value.get(name) for name in output_names]
    if isinstance(value, list | tuple) and what == "loss":
        if len(value) != n:
            raise ValueError(
                f"compile: `loss` is a list of {len(value)} losses but the model has {n} outputs"
            )
        return list(value)
    return [value] * n


class LossesContainer:
    """Builds the total training loss (a graph Symbol) from the compiled losses.

    Args:
        loss: a loss identifier, or a list/dict of them (one per output).
        loss_weights: optional list/dict of floats weighting each output's loss.
        output_names: names of the model outputs.
    """

    def __init__(self, loss: Any, loss_weights: Any, output_names: list[str]) -> None:
        self.output_names = list(output_names)
        per = _per_output(loss, self.output_names, "loss")
        self.losses = [None if item is None else losses_module.get(item) for item in per]
        if all(item is None for item in self.losses):
            raise ValueError(
                "compile: a loss is needed to train or evaluate; pass `loss=` to "
                "compile() (e.g. loss='sparse_categorical_crossentropy')"
            )
        if loss_weights is None:
            self.weights = [1.0] * len(self.output_names)
        elif isinstance(loss_weights, dict):
            self.weights = [float(loss_weights.get(name, 1.0)) for name in self.output_names]
        else:
            weights = list(loss_weights)
            if len(weights) != len(self.output_names):
                raise ValueError(
                    f"compile: `loss_weights` has {len(weights)} entries for "
                    f"{len(self.output_names)} outputs"
                )
            self.weights = [float(w) for w in weights]

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Symbol | None = None) -> Symbol:
        trues, preds = flatten(y_true), flatten(y_pred)
        if len(trues) != len(preds):
            raise ValueError(
                f"the model has {len(preds)} outputs but {len(trues)} target arrays were given"
            )
        total = None
        for loss, weight, t, p in zip(self.losses, self.weights, trues, preds):
            if loss is None:
                continue
            value = loss(t, p, sample_weight)
            if weight != 1.0:
                value = m.multiply(value, weight)
            total = value if total is None else m.add(total, value)
        return total


class MetricsContainer:
    """Host-side metrics updated from each step's targets and predictions.

    Args:
        metrics: None, a list (applied to every output) or a dict keyed by output name.
        losses: the per-output loss objects (to resolve 'accuracy').
        output_names: names of the model outputs.
    """

    def __init__(self, metrics: Any, losses: list[Any], output_names: list[str]) -> None:
        self.output_names = list(output_names)
        self._identifiers = _per_output(metrics or [], self.output_names, "metrics")
        self._losses = losses
        self.built = False
        self.per_output: list[list[Any]] = []

    @property
    def count(self) -> int:
        """How many metrics there are (known before they are built)."""
        return sum(
            len(ids) if isinstance(ids, list | tuple) else int(ids is not None)
            for ids in self._identifiers
        )

    def build(self, y_true: list[np.ndarray], y_pred: list[np.ndarray]) -> None:
        multi = len(self.output_names) > 1
        self.per_output = []
        for i, ids in enumerate(self._identifiers):
            ids = ids if isinstance(ids, list | tuple) else ([] if ids is None else [ids])
            built = []
            for identifier in ids:
                if identifier in ("accuracy", "acc"):
                    metric = metrics_module.resolve_accuracy(
                        self._losses[i] if i < len(self._losses) else None,
                        np.shape(y_true[i]),
                        np.shape(y_pred[i]),
                    )
                    metric.name = "accuracy" if identifier == "accuracy" else "acc"
                elif identifier in ("crossentropy", "ce"):
                    metric = metrics_module.resolve_crossentropy(
                        np.shape(y_true[i]), np.shape(y_pred[i])
                    )
                    metric.name = identifier
                else:
                    metric = metrics_module.to_metric(identifier)
                if multi:
                    metric.name = f"{self.output_names[i]}_{metric.name}"
                built.append(metric)
            self.per_output.append(built)
        self.built = True

    @property
    def metrics(self) -> list[Any]:
        return [metric for group in self.per_output for metric in group]

    def update_state(
        self,
        y_true: list[np.ndarray],
        y_pred: list[np.ndarray],
        sample_weight: np.ndarray | None = None,
    ) -> None:
        if not self.built:
            self.build(y_true, y_pred)
        for group, t, p in zip(self.per_output, y_true, y_pred):
            if not group:
                continue
            t, p, w = metrics_module.match_dtype_and_rank(t, p, sample_weight)
            for metric in group:
                metric.update_state(t, p, w)

    def reset_state(self) -> None:
        for metric in self.metrics:
            metric.reset_state()
