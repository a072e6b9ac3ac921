"""The new metrics and losses beyond their TensorFlow parity (tests/numerics/
test_metrics_losses_parity.py): names, configs, resolution by name, argument errors, the
functions on NumPy arrays against closed forms, and training with the new losses."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim import keras
from ipusim.errors import UnsupportedError
from ipusim.keras import losses, metrics

RNG = np.random.default_rng(11)
Y_BIN = RNG.integers(0, 2, (16, 3)).astype(np.float32)
P_BIN = RNG.uniform(0, 1, (16, 3)).astype(np.float32)

#: One instance of every new metric class, with inputs it accepts.
NEW_METRICS = [
    (metrics.AUC(num_thresholds=13, curve="PR", summation_method="minoring"), "binary"),
    (metrics.AUC(multi_label=True, label_weights=[1.0, 2.0, 0.5]), "binary"),
    (metrics.Precision(thresholds=[0.2, 0.7]), "binary"),
    (metrics.Recall(top_k=2, class_id=1), "binary"),
    (metrics.TruePositives(), "binary"),
    (metrics.FalsePositives(thresholds=0.3), "binary"),
    (metrics.TrueNegatives(), "binary"),
    (metrics.FalseNegatives(), "binary"),
    (metrics.SensitivityAtSpecificity(0.4, num_thresholds=20), "binary"),
    (metrics.SpecificityAtSensitivity(0.4, class_id=0), "binary"),
    (metrics.PrecisionAtRecall(0.3), "binary"),
    (metrics.RecallAtPrecision(0.5), "binary"),
    (metrics.BinaryIoU(threshold=0.4), "binary"),
    (metrics.F1Score(average="macro", threshold=0.5), "binary"),
    (metrics.FBetaScore(beta=0.5, average="weighted"), "binary"),
    (metrics.BinaryCrossentropy(label_smoothing=0.1), "binary"),
    (metrics.Hinge(), "binary"),
    (metrics.SquaredHinge(), "binary"),
    (metrics.RootMeanSquaredError(), "binary"),
    (metrics.LogCoshError(), "binary"),
    (metrics.CosineSimilarity(), "binary"),
    (metrics.R2Score(class_aggregation="variance_weighted_average"), "binary"),
    (metrics.MeanRelativeError(normalizer=[1.0, 2.0, 4.0]), "binary"),
    (metrics.MeanIoU(num_classes=3), "labels"),
    (metrics.IoU(num_classes=3, target_class_ids=[1]), "labels"),
]


def _feed(metric: metrics.Metric, kind: str) -> None:
    if kind == "labels":
        metric.update_state([0, 1, 2, 2, 1], [0, 2, 2, 1, 1])
    else:
        metric.update_state(Y_BIN, P_BIN)


@pytest.mark.parametrize("metric,kind", NEW_METRICS, ids=lambda v: getattr(v, "name", v))
def test_config_round_trip_gives_the_same_results(metric, kind) -> None:
    metric.reset_state()
    _feed(metric, kind)
    config = metric.get_config()
    twin = type(metric).from_config(config)
    _feed(twin, kind)
    np.testing.assert_array_equal(np.asarray(twin.result()), np.asarray(metric.result()))
    again = metrics.deserialize(metrics.serialize(metric))
    assert type(again) is type(metric) and again.get_config() == config


def test_unnamed_metrics_take_unique_session_names_as_keras() -> None:
    keras.backend.clear_session()
    names = [metrics.AUC().name, metrics.AUC().name, metrics.Recall().name, metrics.Recall().name]
    assert names == ["auc", "auc_1", "recall", "recall_1"]
    assert metrics.MeanIoU(2).name == "mean_io_u"  # Keras' snake case of "MeanIoU"
    assert metrics.Hinge().name == metrics.Hinge().name == "hinge"  # default names are fixed


def test_names_resolve_as_keras_get_does() -> None:
    assert isinstance(metrics.get("AUC"), metrics.AUC)
    assert metrics.get("kld") is losses.kl_divergence
    assert metrics.get("logcosh") is losses.log_cosh
    assert losses.get("huber_loss").fn is losses.huber
    assert isinstance(losses.get("CategoricalFocalCrossentropy"), losses.Loss)
    with pytest.raises(ValueError, match="Did you mean 'Precision'"):
        metrics.get("Precison")


def test_metric_functions_on_numpy_match_closed_forms() -> None:
    y = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], np.float32)
    p = np.array([[0.3, -0.2, 1.5], [0.9, 0.4, -1.0]], np.float32)
    signed = 2 * y - 1  # 0/1 labels become -1/1
    np.testing.assert_allclose(
        metrics.hinge(y, p), np.maximum(1 - signed * p, 0).mean(-1), rtol=1e-6
    )
    np.testing.assert_allclose(
        metrics.squared_hinge(y, p), (np.maximum(1 - signed * p, 0) ** 2).mean(-1), rtol=1e-6
    )
    np.testing.assert_allclose(metrics.log_cosh(y, p), np.log(np.cosh(p - y)).mean(-1), rtol=1e-5)
    err = np.abs(p - y)
    huber = np.where(err <= 0.5, 0.5 * err**2, 0.5 * err - 0.125).mean(-1)
    np.testing.assert_allclose(losses.huber(y, p, delta=0.5), huber, rtol=1e-6)
    cos = (y * p).sum(-1) / np.linalg.norm(y, axis=-1) / np.linalg.norm(p, axis=-1)
    np.testing.assert_allclose(metrics.CosineSimilarity()(y, p), cos.mean(), rtol=1e-5)


def test_argument_errors_say_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="num_labels"):
        metrics.AUC(num_labels=3)
    with pytest.raises(ValueError, match=r"Threshold values must be in \[0, 1\]"):
        metrics.Precision(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match="out of range"):
        metrics.IoU(num_classes=2, target_class_ids=[2])
    with pytest.raises(ValueError, match="beta"):
        metrics.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="2D inputs"):
        metrics.R2Score().update_state([1.0, 2.0], [1.0, 2.5])
    tensor = metrics.MeanTensor()
    tensor.update_state([1.0, 2.0])
    with pytest.raises(ValueError, match="same shape"):
        tensor.update_state([1.0, 2.0, 3.0])
    with pytest.raises(UnsupportedError, match="ignore_class"):
        losses.SparseCategoricalCrossentropy(ignore_class=0)
    with pytest.raises(ValueError, match="predictions must be >= 0 and <= 1"):
        metrics.Precision().update_state([0, 1], [-0.5, 2.0])  # logits: IPU TF's Keras asserts
    with pytest.raises(ValueError, match="outside"):
        metrics.MeanIoU(num_classes=2).update_state([0, 1], [0, 2])


def test_reduction_names() -> None:
    assert losses.Reduction.all() == ("auto", "none", "sum", "sum_over_batch_size")
    losses.Reduction.validate("sum")
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        losses.Reduction.validate("mean")


@pytest.mark.parametrize(
    "loss", ["huber", "log_cosh", "squared_hinge", losses.BinaryFocalCrossentropy(gamma=1.0)]
)
def test_training_with_the_new_losses_lowers_them(loss) -> None:
    keras.utils.set_random_seed(5)
    x = RNG.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, :1] - x[:, 1:2] > 0).astype(np.float32)
    model = keras.Sequential(
        [keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=loss, metrics=["AUC"])
    history = model.fit(x, y, batch_size=16, epochs=6, shuffle=False, verbose=0).history
    assert history["loss"][-1] < 0.9 * history["loss"][0]


@pytest.mark.parametrize(
    "labels,units,loss",
    [
        ("sparse", 3, "sparse_categorical_crossentropy"),
        ("onehot", 3, "categorical_crossentropy"),
        ("binary", 1, "binary_crossentropy"),
    ],
)
def test_crossentropy_metric_picks_the_loss_variant_from_the_shapes(labels, units, loss) -> None:
    keras.utils.set_random_seed(2)
    x = RNG.standard_normal((32, 4)).astype(np.float32)
    classes = RNG.integers(0, units if units > 1 else 2, 32)
    y = {
        "sparse": classes,
        "onehot": np.eye(3, dtype=np.float32)[classes % 3],
        "binary": classes[:, None].astype(np.float32),
    }[labels]
    activation = "sigmoid" if units == 1 else "softmax"
    model = keras.Sequential([keras.layers.Dense(units, activation=activation)])
    model.compile(optimizer="sgd", loss=loss, metrics=["crossentropy", "ce"])
    logs = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    # The host-side metric and the graph loss: the same cross-entropy of the same batch.
    assert logs["crossentropy"] == pytest.approx(logs["loss"], rel=1e-5)
    assert logs["ce"] == logs["crossentropy"]


def test_array_valued_metrics_are_logged_as_arrays_and_shown_as_their_mean(capsys) -> None:
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 16)]
    model = keras.Sequential([keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=[metrics.F1Score()])
    capsys.readouterr()
    logs = model.evaluate(x, y, batch_size=16, verbose=2, return_dict=True)
    assert logs["f1_score"].shape == (3,)
    assert f"f1_score: {np.mean(logs['f1_score']):.4f}" in capsys.readouterr().out


def test_saved_model_keeps_the_new_loss_and_metric_configurations(tmp_path) -> None:
    keras.utils.set_random_seed(4)
    x = RNG.standard_normal((32, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid")])
    model.compile(
        optimizer="adam",
        loss=losses.BinaryFocalCrossentropy(gamma=1.0, apply_class_balancing=True),
        metrics=[
            metrics.AUC(curve="PR", num_thresholds=31, name="prauc"),
            metrics.Precision(thresholds=0.3, name="p30"),
            metrics.MeanIoU(2, name="miou"),
        ],
    )
    model.fit(x, y, epochs=1, verbose=0)
    model.save(str(tmp_path / "m.npz"))
    loaded = keras.models.load_model(str(tmp_path / "m.npz"))
    want = model.evaluate(x, y, verbose=0, return_dict=True)
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == want
    # A different gamma or curve would change these, so the configurations really came back.
    assert set(want) == {"loss", "prauc", "p30", "miou"}


class _CountAbove(metrics.Metric):
    """A user-written metric in Keras' style: add_weight state, NumPy updates."""

    def __init__(self, name: str = "count_above", **kwargs) -> None:
        super().__init__(name=name, **kwargs)
        self.count = self.add_weight(name="count", initializer="zeros")
        self.seen = self.add_weight(name="seen", shape=(2,), initializer="ones")

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self.count.assign_add(np.sum(np.asarray(y_pred) > 0.5))
        self.seen.assign_add([1.0, np.asarray(y_pred).shape[0]])

    def result(self):
        return self.count


class _OldStyle(metrics.Metric):
    """Overrides reset_states (the name before Keras 2.5) and uses a variable in it."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.total = self.add_weight(name="total")

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        self.total.assign_add(1.0)

    def result(self):
        return self.total + 0.0

    def reset_states(self) -> None:
        self.total.assign(-1.0)


def test_user_metrics_with_add_weight_run_in_fit_and_reset_each_epoch() -> None:
    keras.utils.set_random_seed(6)
    x = RNG.standard_normal((24, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid")])
    counter, old = _CountAbove(), _OldStyle()
    assert [v.name for v in counter.variables] == ["count_above/count:0", "count_above/seen:0"]
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[counter, old])
    first = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    # As Keras: the metrics are built on the first batch, so the first evaluate starts from the
    # initial values (seen = ones); the second resets them first (zeros; the old-style
    # override sets -1). Three batches each time.
    np.testing.assert_array_equal(counter.seen.numpy(), [4.0, 25.0])
    assert first[old.name] == 3.0
    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    predictions = model.predict(x, batch_size=8, verbose=0)
    assert logs["count_above"] == float(np.sum(predictions > 0.5))
    np.testing.assert_array_equal(counter.seen.numpy(), [3.0, 24.0])
    assert logs[old.name] == -1.0 + 3


def test_metrics_ignore_sample_weights_and_weighted_metrics_use_them() -> None:
    keras.utils.set_random_seed(8)
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    y = RNG.standard_normal((16, 1)).astype(np.float32)
    w = RNG.uniform(0.0, 3.0, 16).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"], weighted_metrics=["mae"])
    logs = model.evaluate(x, y, sample_weight=w, batch_size=16, verbose=0, return_dict=True)
    error = np.abs(model.predict(x, verbose=0) - y)[:, 0].astype(np.float64)
    # As Keras: compile(metrics=...) are unweighted; the weighted copy takes "weighted_".
    assert list(logs) == ["loss", "mae", "weighted_mae"]
    assert logs["mae"] == pytest.approx(error.mean(), rel=1e-5)
    assert logs["weighted_mae"] == pytest.approx((w * error).sum() / w.sum(), rel=1e-5)
    shared = metrics.AUC()
    with pytest.raises(ValueError, match="duplicated metrics object"):
        model.compile(optimizer="sgd", loss="mse", metrics=[shared], weighted_metrics=[shared])
