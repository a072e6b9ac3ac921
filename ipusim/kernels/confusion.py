"""Confusion-count kernels for ``ipusim.keras.metrics``: weighted true/false positive counts per
threshold, and class confusion matrices.

Inputs are C-contiguous 2-D ``(rows, labels)`` arrays (the wrappers reshape); counts accumulate
in float64 (the metrics round them into their state dtype).
"""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _bucket_counts(bucket, pos, neg, tp, fp):
    # Each prediction adds its weight to the bucket of the highest threshold it exceeds.
    rows, labels = bucket.shape
    for i in range(rows):
        for j in range(labels):
            b = bucket[i, j]
            if b >= 0:
                tp[b, j] += pos[i, j]
                fp[b, j] += neg[i, j]


@kernel
def _threshold_counts(pred, pos, neg, thresholds, tp, fp):
    rows, labels = pred.shape
    for t in range(thresholds.size):
        for i in range(rows):
            for j in range(labels):
                if pred[i, j] > thresholds[t]:
                    tp[t, j] += pos[i, j]
                    fp[t, j] += neg[i, j]


@kernel
def _confusion_matrix(truth, pred, weights, cm):
    for i in range(truth.size):
        cm[truth[i], pred[i]] += weights[i]


def positive_counts(
    pred: np.ndarray, pos: np.ndarray, neg: np.ndarray, thresholds: np.ndarray, evenly: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted positives and negatives predicted above each threshold: ``(tp, fp)``, each
    ``(T, labels)`` float64.

    Args:
        pred: ``(rows, labels)`` predictions, in the thresholds' dtype.
        pos, neg: ``(rows, labels)`` weights of positive and of negative labels (0 elsewhere).
        thresholds: ``(T,)`` thresholds, ascending when ``evenly``.
        evenly: the thresholds are ``i / (T - 1)`` (end points possibly moved out by epsilon):
            count as Keras' optimised path, predictions clipped to ``[0, 1]`` and binned by
            ``ceil(p * (T - 1)) - 1`` (in the predictions' dtype), then summed from the top
            bucket down.
    """
    pred = np.ascontiguousarray(pred)
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    neg = np.ascontiguousarray(neg, dtype=np.float64)
    num = thresholds.size
    tp = np.zeros((num, pred.shape[1]))
    fp = np.zeros((num, pred.shape[1]))
    if not evenly:
        _threshold_counts(pred, pos, neg, np.ascontiguousarray(thresholds), tp, fp)
        return tp, fp
    bucket = np.ceil(np.clip(pred, 0.0, 1.0) * pred.dtype.type(num - 1)) - 1
    if thresholds[0] < 0.0 or thresholds[-1] > 1.0:
        bucket = np.maximum(bucket, 0)  # epsilon end points: 0 still exceeds the first
    _bucket_counts(np.ascontiguousarray(bucket, dtype=np.int64), pos, neg, tp, fp)
    return np.cumsum(tp[::-1], axis=0)[::-1], np.cumsum(fp[::-1], axis=0)[::-1]


def confusion_matrix(
    truth: np.ndarray, pred: np.ndarray, weights: np.ndarray | None, num_classes: int
) -> np.ndarray:
    """``(num_classes, num_classes)`` float64 matrix of weighted counts, rows the true class.

    ``truth`` and ``pred`` are int64 class ids in ``[0, num_classes)`` (the caller checks).
    """
    truth = np.ascontiguousarray(truth, dtype=np.int64).reshape(-1)
    pred = np.ascontiguousarray(pred, dtype=np.int64).reshape(-1)
    if weights is None:
        weights = np.ones(truth.size)
    cm = np.zeros((num_classes, num_classes))
    _confusion_matrix(truth, pred, np.ascontiguousarray(weights, dtype=np.float64), cm)
    return cm
