"""What ``compile()`` configures: the loss of each output and the metrics reported in the logs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError
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
            raise ConfigurationError(
                f"compile: `{what}` has keys {sorted(unknown)} that are not output "
                f"names; the outputs are {output_names}"
            )
        return [value.get(name) for name in output_names]
    if isinstance(value, list | tuple) and what == "loss":
        if len(value) != n:
            raise ConfigurationError(
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
            raise ConfigurationError(
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
                raise ConfigurationError(
                    f"compile: `loss_weights` has {len(weights)} entries for "
                    f"{len(self.output_names)} outputs"
                )
            self.weights = [float(w) for w in weights]

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Symbol | None = None) -> Symbol:
        trues, preds = flatten(y_true), flatten(y_pred)
        if len(trues) != len(preds):
            raise InputDataError(
                f"the model has {len(preds)} outputs but {len(trues)} target arrays were given"
            )
        total: Symbol | None = None
        for loss, weight, t, p in zip(self.losses, self.weights, trues, preds):
            if loss is None:
                continue
            value = loss(t, p, sample_weight)
            if weight != 1.0:
                value = m.multiply(value, weight)
            total = value if total is None else m.add(total, value)
        assert total is not None  # __init__ refuses a compile without a loss for some output
        return total


def _identifier_list(ids: Any) -> list[Any]:
    return list(ids) if isinstance(ids, list | tuple) else ([] if ids is None else [ids])


def check_duplicated_metrics(metrics: Any, weighted_metrics: Any) -> None:
    """Keras' rule: one metric object may not be in both lists (it would be updated twice)."""
    seen: list[Any] = []
    for item in flatten([metrics, weighted_metrics]):
        if isinstance(item, metrics_module.Metric):
            if any(item is other for other in seen):
                raise ConfigurationError(
                    "Found duplicated metrics object in the user provided metrics and weighted "
                    "metrics. This will cause the same metric object to be updated multiple "
                    f"times, and report wrong results. Duplicated items: [{item!r}]; pass a "
                    "separate instance to each"
                )
            seen.append(item)


class MetricsContainer:
    """Host-side metrics updated from each step's targets and predictions.

    As Keras: ``metrics`` are updated without the sample weights, ``weighted_metrics`` with
    them (``sample_weight``; ``class_weight`` would join them, but fit() does not take it yet).

    Args:
        metrics: None, a list (applied to every output) or a dict keyed by output name.
        losses: the per-output loss objects (to resolve 'accuracy').
        output_names: names of the model outputs.
        weighted_metrics: like ``metrics``, for the weighted ones.
    """

    def __init__(
        self,
        metrics: Any,
        losses: list[Any],
        output_names: list[str],
        weighted_metrics: Any = None,
    ) -> None:
        self.output_names = list(output_names)
        check_duplicated_metrics(metrics, weighted_metrics)
        self._identifiers = _per_output(metrics or [], self.output_names, "metrics")
        self._weighted_identifiers = _per_output(
            weighted_metrics or [], self.output_names, "weighted_metrics"
        )
        self._losses = losses
        self.built = False
        self.per_output: list[list[Any]] = []
        self.weighted_per_output: list[list[Any]] = []

    @property
    def count(self) -> int:
        """How many metrics there are (known before they are built)."""
        return sum(
            len(_identifier_list(ids)) for ids in (*self._identifiers, *self._weighted_identifiers)
        )

    def _metric(self, identifier: Any, i: int, y_true: Any, y_pred: Any) -> Any:
        if identifier not in metrics_module._SHAPE_RESOLVED:
            return metrics_module.to_metric(identifier)
        loss = self._losses[i] if i < len(self._losses) else None  # (named as the user spelt it)
        return metrics_module.to_metric(identifier, np.shape(y_true[i]), np.shape(y_pred[i]), loss)

    def build(self, y_true: list[np.ndarray], y_pred: list[np.ndarray]) -> None:
        self.per_output, self.weighted_per_output = [], []
        for i, (ids, weighted_ids) in enumerate(
            zip(self._identifiers, self._weighted_identifiers, strict=True)
        ):
            self.per_output.append(
                [self._metric(m, i, y_true, y_pred) for m in _identifier_list(ids)]
            )
            self.weighted_per_output.append(
                [self._metric(m, i, y_true, y_pred) for m in _identifier_list(weighted_ids)]
            )
        self._set_names()
        self.built = True

    def _set_names(self) -> None:
        """Keras' naming: output-name prefixes on multi-output models, ``weighted_`` for a
        weighted metric whose name is taken; two metrics of one name are an error."""
        multi = len(self.output_names) > 1
        names: set[str] = set()

        def claim(name: str) -> None:
            if name in names:
                raise ConfigurationError(
                    f"Found two metrics with the same name: {name}. All the metrics added to "
                    "the model need to have unique names; pass name=... to one of them"
                )
            names.add(name)

        for output, plain, weighted in zip(
            self.output_names, self.per_output, self.weighted_per_output, strict=True
        ):
            for metric in plain:
                if multi:
                    metric.name = f"{output}_{metric.name}"
                claim(metric.name)
            for metric in weighted:
                if multi:
                    taken = f"{output}_{metric.name}" in names
                    metric.name = f"{output}_{'weighted_' if taken else ''}{metric.name}"
                elif metric.name in names:
                    metric.name = f"weighted_{metric.name}"
                claim(metric.name)

    @property
    def metrics(self) -> list[Any]:
        """Per output: the metrics, then the weighted metrics (Keras' order)."""
        return [
            metric
            for plain, weighted in zip(self.per_output, self.weighted_per_output, strict=True)
            for metric in (*plain, *weighted)
        ]

    def update_state(
        self,
        y_true: list[np.ndarray],
        y_pred: list[np.ndarray],
        sample_weight: np.ndarray | None = None,
    ) -> None:
        if not self.built:
            self.build(y_true, y_pred)
        groups = zip(self.per_output, self.weighted_per_output, y_true, y_pred, strict=False)
        for plain, weighted, t, p in groups:
            if not plain and not weighted:
                continue
            t, p, w = metrics_module.match_dtype_and_rank(t, p, sample_weight)
            for metric in plain:
                metric.update_state(t, p, None)
            for metric in weighted:
                metric.update_state(t, p, w)

    def reset_state(self) -> None:
        for metric in self.metrics:
            metric.reset_state()
