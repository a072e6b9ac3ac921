"""Intersection-over-union metrics: IoU, MeanIoU, BinaryIoU, OneHotIoU, OneHotMeanIoU
(``tf_keras`` 2.x ``iou_metrics``).

State is a ``(num_classes, num_classes)`` confusion matrix (rows: true class, columns: predicted
class) of weighted counts. The result is the mean of ``TP / (TP + FP + FN)`` over the target
classes whose denominator is not zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError
from ipusim.keras.keyword_init import REQUIRED, fields, keyword_init, table_class
from ipusim.keras.metrics.base import Metric
from ipusim.kernels import confusion as ck


class IoU(Metric):
    """Mean IoU over ``target_class_ids``.

    Args:
        num_classes: number of classes (labels and predictions are in ``[0, num_classes)``).
        target_class_ids: the classes averaged over.
        name, dtype: as :class:`Metric`.
        ignore_class: a label value whose examples are left out.
        sparse_y_true, sparse_y_pred: False for one-hot / score vectors (argmax over ``axis``).
        axis: the class axis of non-sparse inputs.
    """

    #: Config keys a subclass does not take as arguments (left out of ``get_config``).
    _unlisted: tuple[str, ...] = ()

    def __init__(
        self,
        num_classes: int,
        target_class_ids: list[int] | tuple[int, ...],
        name: str | None = None,
        dtype: Any = None,
        ignore_class: int | None = None,
        sparse_y_true: bool = True,
        sparse_y_pred: bool = True,
        axis: int = -1,
    ) -> None:
        if max(target_class_ids) >= num_classes:
            raise ConfigurationError(
                f"Target class id {max(target_class_ids)} is out of range, which is "
                f"[0, {num_classes})."
            )
        self.target_class_ids = list(target_class_ids)
        self.num_classes = int(num_classes)
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        super().__init__(name=name, dtype=dtype)

    def reset_state(self) -> None:
        self.total_cm = np.zeros((self.num_classes, self.num_classes), dtype=self.dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add a batch of class labels and predictions (one-hot/probabilities if not sparse)."""
        truth = self._classes(y_true, self.sparse_y_true)
        pred = self._classes(y_pred, self.sparse_y_pred)
        weights = None
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=self.dtype).reshape(-1)
            weights = np.broadcast_to(weights, pred.shape)
        if self.ignore_class is not None:
            valid = truth != self.ignore_class
            truth, pred = truth[valid], pred[valid]
            weights = None if weights is None else weights[valid]
        self._check_range(truth, "y_true")
        self._check_range(pred, "y_pred")
        cm = ck.confusion_matrix(truth, pred, weights, self.num_classes)
        self.total_cm = (self.total_cm + cm.astype(self.dtype)).astype(self.dtype)

    def _classes(self, values: Any, sparse: bool) -> np.ndarray:
        """Class ids, flattened: cast to the state dtype then to integers (as
        ``tf.math.confusion_matrix``), after an argmax over ``axis`` when not sparse."""
        array = np.asarray(values)
        if not sparse:
            array = np.argmax(array, axis=self.axis)
        return array.astype(self.dtype).reshape(-1).astype(np.int64)

    def _check_range(self, classes: np.ndarray, what: str) -> None:
        if classes.size and (classes.min() < 0 or classes.max() >= self.num_classes):
            raise InputDataError(
                f"{type(self).__name__}: {what} holds classes in [{int(classes.min())}, "
                f"{int(classes.max())}], outside [0, {self.num_classes}); num_classes="
                f"{self.num_classes} must cover every label and prediction"
            )

    def result(self) -> float:
        cm = self.total_cm
        tp = np.diagonal(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - tp
        tp, denominator = tp[self.target_class_ids], denominator[self.target_class_ids]
        valid = int(np.count_nonzero(denominator))
        iou = np.where(denominator == 0, 0.0, tp / np.where(denominator == 0, 1, denominator))
        return float(np.sum(iou, dtype=self.dtype) / valid) if valid else 0.0

    def get_config(self) -> dict[str, Any]:
        config = {
            **super().get_config(),
            **fields(
                self, "num_classes target_class_ids ignore_class sparse_y_true sparse_y_pred axis"
            ),
        }
        for key in self._unlisted:
            del config[key]
        return config


_OPTIONS = (("ignore_class", None), ("sparse_y_true", True), ("sparse_y_pred", True), ("axis", -1))


def _variant(cls_name: str, base: type[IoU], doc: str, mean: bool, one_hot: bool) -> type[IoU]:
    """An :class:`IoU` class over every class (``mean``: no ``target_class_ids`` argument) and/or
    of one-hot labels (``one_hot``: no ``sparse_y_true`` argument, False; ``sparse_y_pred``
    defaults to False), with Keras' signature and ``get_config``."""
    unlisted = ("target_class_ids",) * mean + ("sparse_y_true",) * one_hot
    options = [(k, False if one_hot and k == "sparse_y_pred" else d) for k, d in _OPTIONS]
    head = [("num_classes", REQUIRED), ("target_class_ids", REQUIRED), ("name", None)]
    parameters = [(k, d) for k, d in [*head, ("dtype", None), *options] if k not in unlisted]

    def build(self: Any, num_classes: int, **arguments: Any) -> None:
        if mean:
            arguments["target_class_ids"] = list(range(num_classes))
        if one_hot:
            arguments["sparse_y_true"] = False
        IoU.__init__(self, num_classes, **arguments)

    init = keyword_init(parameters, build)
    return table_class(cls_name, base, __name__, doc, init, _unlisted=unlisted)


MeanIoU = _variant("MeanIoU", IoU, "Mean IoU over every class.", mean=True, one_hot=False)


class BinaryIoU(IoU):
    """IoU of two classes, predictions ``>= threshold`` being class 1."""

    def __init__(
        self,
        target_class_ids: list[int] | tuple[int, ...] = (0, 1),
        threshold: float = 0.5,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        self.threshold = threshold
        super().__init__(2, target_class_ids, name, dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        pred = (np.asarray(y_pred, dtype=self.dtype) >= self.threshold).astype(self.dtype)
        super().update_state(y_true, pred, sample_weight)

    def get_config(self) -> dict[str, Any]:
        return fields(self, "name dtype target_class_ids threshold")


OneHotIoU = _variant(
    "OneHotIoU",
    IoU,
    "IoU over ``target_class_ids`` of one-hot labels and score vectors (argmax taken).",
    mean=False,
    one_hot=True,
)
OneHotMeanIoU = _variant(
    "OneHotMeanIoU",
    MeanIoU,
    "Mean IoU over every class, of one-hot labels and score vectors (argmax taken).",
    mean=True,
    one_hot=True,
)
