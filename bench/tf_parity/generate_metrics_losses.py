"""Write TensorFlow Keras reference fixtures for the metrics and losses beyond generate.py's.

Run in the separate TensorFlow environment (tf-keras, Keras 2, as IPU TensorFlow has)::

    /work/tfvenv/bin/python bench/tf_parity/generate_metrics_losses.py

It writes ``bench/tf_parity/fixtures/metrics2.npz`` and ``losses2.npz`` in generate.py's layout
(cases ``<case>/<array>`` plus ``<case>/meta``, JSON as uint8 bytes), read by
tests/keras/test_metrics_parity.py and tests/numerics/test_losses_parity.py.

* metrics2: for every metric class and option, ``result()`` after each of three
  ``update_state`` calls (with and without sample weights), then after ``reset_state()``, then
  after one more update (state really cleared). Results may be arrays (several thresholds,
  per-class scores).
* losses2: for every loss class, option, reduction and sample weighting: the loss value and the
  gradient of its sum w.r.t. the predictions (taken as given, inside ``tf.function``).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from generate import Cases, _rng, keras

BATCH, CLASSES = 8, 5


def _inputs(kind: str, rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
    """(y_true, y_pred) of one batch for an input kind."""
    shape = (BATCH, CLASSES)
    f32 = np.float32
    if kind in ("binary", "binary_logits", "multilabel"):
        y_true = rng.integers(0, 2, shape).astype(f32)
        y_pred = rng.uniform(0, 1, shape) if kind != "binary_logits" else 2 * rng.normal(size=shape)
        return y_true, y_pred.astype(f32)
    if kind == "binary_grid":  # predictions on the threshold grid, 0 and 1 included
        return rng.integers(0, 2, shape).astype(f32), (rng.integers(0, 11, shape) / 10).astype(f32)
    if kind == "binary_col":
        return rng.integers(0, 2, (BATCH, 1)).astype(f32), rng.uniform(0, 1, (BATCH, 1)).astype(f32)
    if kind == "pm1":
        return (2 * rng.integers(0, 2, shape) - 1).astype(f32), rng.normal(size=shape).astype(f32)
    if kind in ("onehot", "onehot_logits"):
        y_true = np.eye(CLASSES, dtype=f32)[rng.integers(0, CLASSES, BATCH)]
        y_pred = rng.uniform(0.01, 1, shape) if kind == "onehot" else 2 * rng.normal(size=shape)
        return y_true, y_pred.astype(f32)
    if kind in ("sparse", "sparse_logits"):
        y_true = rng.integers(0, CLASSES, BATCH).astype(f32)
        y_pred = rng.uniform(0.01, 1, shape) if kind == "sparse" else 2 * rng.normal(size=shape)
        return y_true, y_pred.astype(f32)
    if kind == "labels":
        return rng.integers(0, 3, BATCH).astype(f32), rng.integers(0, 3, BATCH).astype(f32)
    if kind == "labels2d":
        return rng.integers(0, 3, (BATCH, 3)).astype(f32), rng.integers(0, 3, (BATCH, 3)).astype(
            f32
        )
    if kind == "regression":
        return rng.normal(size=shape).astype(f32), (1.5 * rng.normal(size=shape)).astype(f32)
    if kind == "positive":
        return rng.uniform(0, 3, shape).astype(f32), rng.uniform(-0.5, 3, shape).astype(f32)
    if kind == "counts":
        return rng.poisson(1.5, shape).astype(f32), rng.uniform(0.1, 3, shape).astype(f32)
    if kind == "distribution":
        p = np.exp(rng.normal(size=(2,) + shape))
        p /= p.sum(-1, keepdims=True)
        return p[0].astype(f32), p[1].astype(f32)
    if kind == "values":
        return None, rng.normal(size=shape).astype(f32)
    raise ValueError(kind)


# (case name, class, config, input kind)
METRIC_CASES: list[tuple[str, str, dict, str]] = [
    ("auc_roc", "AUC", {}, "binary"),
    ("auc_roc_grid", "AUC", {}, "binary_grid"),
    ("auc_roc_7", "AUC", {"num_thresholds": 7}, "binary"),
    ("auc_roc_minoring", "AUC", {"summation_method": "minoring"}, "binary"),
    ("auc_roc_majoring", "AUC", {"summation_method": "majoring"}, "binary"),
    ("auc_pr", "AUC", {"curve": "PR"}, "binary"),
    ("auc_pr_majoring", "AUC", {"curve": "PR", "summation_method": "majoring"}, "binary"),
    ("auc_pr_gain", "AUC", {"curve": "PR_GAIN", "num_thresholds": 20}, "binary"),
    ("auc_thresholds", "AUC", {"thresholds": [0.2, 0.45, 0.7]}, "binary"),
    ("auc_multi_label", "AUC", {"multi_label": True}, "multilabel"),
    (
        "auc_multi_label_weights",
        "AUC",
        {"multi_label": True, "num_labels": 5, "label_weights": [1, 2, 0, 1, 3]},
        "multilabel",
    ),
    ("auc_label_weights", "AUC", {"label_weights": [1, 2, 0, 1, 3]}, "binary"),
    ("auc_from_logits", "AUC", {"from_logits": True}, "binary_logits"),
    ("auc_column", "AUC", {}, "binary_col"),
    ("precision", "Precision", {}, "binary"),
    ("precision_grid", "Precision", {"thresholds": [0.0, 0.5, 1.0]}, "binary_grid"),
    ("precision_thresholds", "Precision", {"thresholds": [0.3, 0.6]}, "binary"),
    ("precision_top_k", "Precision", {"top_k": 2}, "binary"),
    ("precision_class_id", "Precision", {"class_id": 1}, "binary"),
    ("precision_top_k_class", "Precision", {"top_k": 2, "class_id": 3}, "binary"),
    ("recall", "Recall", {}, "binary"),
    ("recall_thresholds", "Recall", {"thresholds": [0.25, 0.7]}, "binary"),
    ("recall_top_k", "Recall", {"top_k": 3}, "onehot"),
    ("recall_class_id", "Recall", {"class_id": 2, "thresholds": 0.4}, "binary"),
    ("true_positives", "TruePositives", {}, "binary"),
    ("true_positives_even", "TruePositives", {"thresholds": [0.0, 0.5, 1.0]}, "binary_grid"),
    ("false_positives", "FalsePositives", {"thresholds": [0.15, 0.5, 0.85]}, "binary"),
    ("true_negatives", "TrueNegatives", {"thresholds": 0.3}, "binary"),
    ("false_negatives", "FalseNegatives", {}, "binary_grid"),
    ("sens_at_spec", "SensitivityAtSpecificity", {"specificity": 0.5}, "binary"),
    (
        "sens_at_spec_50",
        "SensitivityAtSpecificity",
        {"specificity": 0.8, "num_thresholds": 50},
        "binary",
    ),
    ("spec_at_sens", "SpecificityAtSensitivity", {"sensitivity": 0.6}, "binary"),
    (
        "spec_at_sens_class",
        "SpecificityAtSensitivity",
        {"sensitivity": 0.4, "class_id": 2},
        "binary",
    ),
    ("prec_at_recall", "PrecisionAtRecall", {"recall": 0.5}, "binary"),
    ("recall_at_prec", "RecallAtPrecision", {"precision": 0.6}, "binary"),
    ("recall_at_prec_1", "RecallAtPrecision", {"precision": 0.4, "num_thresholds": 1}, "binary"),
    ("mean_iou", "MeanIoU", {"num_classes": 3}, "labels"),
    ("mean_iou_2d", "MeanIoU", {"num_classes": 3}, "labels2d"),
    ("mean_iou_ignore", "MeanIoU", {"num_classes": 3, "ignore_class": 0}, "labels"),
    ("iou", "IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, "labels"),
    ("binary_iou", "BinaryIoU", {}, "binary"),
    ("binary_iou_target", "BinaryIoU", {"target_class_ids": [1], "threshold": 0.3}, "binary"),
    ("one_hot_iou", "OneHotIoU", {"num_classes": 5, "target_class_ids": [0, 3]}, "onehot"),
    ("one_hot_mean_iou", "OneHotMeanIoU", {"num_classes": 5}, "onehot"),
    ("bce", "BinaryCrossentropy", {}, "binary"),
    ("bce_logits", "BinaryCrossentropy", {"from_logits": True}, "binary_logits"),
    ("bce_smoothing", "BinaryCrossentropy", {"label_smoothing": 0.1}, "binary"),
    ("cce", "CategoricalCrossentropy", {}, "onehot"),
    (
        "cce_logits",
        "CategoricalCrossentropy",
        {"from_logits": True, "label_smoothing": 0.2},
        "onehot_logits",
    ),
    ("scce", "SparseCategoricalCrossentropy", {}, "sparse"),
    ("scce_logits", "SparseCategoricalCrossentropy", {"from_logits": True}, "sparse_logits"),
    ("hinge", "Hinge", {}, "binary_logits"),
    ("hinge_pm1", "Hinge", {}, "pm1"),
    ("squared_hinge", "SquaredHinge", {}, "binary_logits"),
    ("categorical_hinge", "CategoricalHinge", {}, "onehot_logits"),
    ("kld", "KLDivergence", {}, "distribution"),
    ("poisson", "Poisson", {}, "counts"),
    ("logcosh", "LogCoshError", {}, "regression"),
    ("msle", "MeanSquaredLogarithmicError", {}, "positive"),
    ("mape", "MeanAbsolutePercentageError", {}, "regression"),
    ("cosine", "CosineSimilarity", {}, "regression"),
    ("rmse", "RootMeanSquaredError", {}, "regression"),
    (
        "mean_relative_error",
        "MeanRelativeError",
        {"normalizer": [1.0, 2.0, 0.0, 4.0, 0.5]},
        "regression",
    ),
    ("mean_tensor", "MeanTensor", {}, "values"),
    ("r2", "R2Score", {}, "regression"),
    ("r2_variance", "R2Score", {"class_aggregation": "variance_weighted_average"}, "regression"),
    ("r2_raw", "R2Score", {"class_aggregation": None}, "regression"),
    ("r2_adjusted", "R2Score", {"num_regressors": 2}, "regression"),
    ("f1", "F1Score", {"threshold": 0.5}, "binary"),
    ("f1_macro", "F1Score", {"average": "macro"}, "onehot"),
    ("fbeta_micro", "FBetaScore", {"beta": 2.0, "average": "micro", "threshold": 0.4}, "binary"),
    ("fbeta_weighted", "FBetaScore", {"average": "weighted", "threshold": 0.6}, "binary"),
]


def _result(metric: object) -> np.ndarray:
    return np.asarray(metric.result(), dtype=np.float64)  # type: ignore[attr-defined]


def metrics2() -> Cases:
    cases = Cases()
    for name, cls, config, kind in METRIC_CASES:
        for weighted in (False, True):
            case = name + ("/weighted" if weighted else "")
            rng = _rng("metric2/" + case)
            metric = getattr(keras.metrics, cls)(**config)
            arrays: dict[str, object] = {}
            results = []
            for b in range(4):
                y_true, y_pred = _inputs(kind, rng)
                per_element = kind == "labels2d" or cls == "BinaryIoU"  # IoU flattens weights
                sw_shape = y_pred.shape if per_element else BATCH
                sw = rng.uniform(0, 2, sw_shape).astype(np.float32) if weighted else None
                if b == 3:  # after a reset, one more batch
                    metric.reset_state()
                    results.append(_result(metric))
                if y_true is None:
                    metric.update_state(y_pred, sample_weight=sw)
                else:
                    metric.update_state(y_true, y_pred, sample_weight=sw)
                results.append(_result(metric))
                if y_true is not None:
                    arrays[f"y_true{b}"] = y_true
                arrays[f"y_pred{b}"] = y_pred
                if sw is not None:
                    arrays[f"sample_weight{b}"] = sw
            arrays["results"] = np.stack(results)
            cases.add(case, {"class": cls, "config": config, "kind": kind}, **arrays)
    return cases


# (case name, class, config, input kind)
LOSS_CASES: list[tuple[str, str, dict, str]] = [
    ("hinge", "Hinge", {}, "binary_logits"),
    ("hinge_pm1", "Hinge", {}, "pm1"),
    ("squared_hinge", "SquaredHinge", {}, "binary_logits"),
    ("categorical_hinge", "CategoricalHinge", {}, "onehot_logits"),
    ("huber", "Huber", {}, "regression"),
    ("huber_delta", "Huber", {"delta": 0.4}, "regression"),
    ("log_cosh", "LogCosh", {}, "regression"),
    ("kld", "KLDivergence", {}, "distribution"),
    ("poisson", "Poisson", {}, "counts"),
    ("cosine", "CosineSimilarity", {}, "regression"),
    ("cosine_axis0", "CosineSimilarity", {"axis": 0}, "regression"),
    ("mape", "MeanAbsolutePercentageError", {}, "regression"),
    ("msle", "MeanSquaredLogarithmicError", {}, "positive"),
    ("bfce", "BinaryFocalCrossentropy", {}, "binary"),
    ("bfce_logits", "BinaryFocalCrossentropy", {"from_logits": True}, "binary_logits"),
    (
        "bfce_balanced",
        "BinaryFocalCrossentropy",
        {"apply_class_balancing": True, "alpha": 0.3, "gamma": 1.5, "label_smoothing": 0.1},
        "binary",
    ),
    ("cfce", "CategoricalFocalCrossentropy", {}, "onehot"),
    (
        "cfce_logits",
        "CategoricalFocalCrossentropy",
        {"from_logits": True, "alpha": 0.5, "gamma": 3.0, "label_smoothing": 0.1},
        "onehot_logits",
    ),
]


def losses2() -> Cases:
    cases = Cases()
    for base, cls, config, kind in LOSS_CASES:
        for reduction in ("auto", "sum", "none"):
            for weighted in (False, True):
                name = f"{base}/{reduction}" + ("/weighted" if weighted else "")
                rng = _rng("loss2/" + name)
                y_true, y_pred = _inputs(kind, rng)
                sw = rng.uniform(0.2, 2.0, BATCH).astype(np.float32) if weighted else None
                if config.get("axis") == 0 and sw is not None:
                    sw = rng.uniform(0.2, 2.0, CLASSES).astype(np.float32)
                loss = getattr(keras.losses, cls)(reduction=reduction, **config)

                @tf.function
                def run(x, loss=loss, y_true=y_true, sw=sw):
                    with tf.GradientTape() as tape:
                        tape.watch(x)
                        value = loss(y_true, x, sample_weight=sw)
                        objective = tf.reduce_sum(value)
                    return value, tape.gradient(objective, x)

                value, grad = run(tf.constant(y_pred))
                # generate.py's layout (predictions given as they are: "logits"), so that
                # tests/numerics/tf_parity_cases.run_loss runs these cases too.
                arrays = {
                    "logits": y_pred,
                    "y_true": y_true,
                    "value": value.numpy(),
                    "grad": grad.numpy(),
                }
                if sw is not None:
                    arrays["sample_weight"] = sw
                meta = {
                    "class": cls,
                    "config": {**config, "reduction": reduction},
                    "prediction": "logits",
                }
                cases.add(name, meta, **arrays)
    return cases


def main() -> None:
    tf.config.experimental.enable_op_determinism()
    metrics2().write("metrics2.npz")
    losses2().write("losses2.npz")
    print(f"TensorFlow {tf.__version__}, tf-keras {keras.__version__}")


if __name__ == "__main__":
    main()
