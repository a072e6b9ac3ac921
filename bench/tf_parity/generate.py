"""Write the TensorFlow Keras reference fixtures that tests/numerics/test_tf_parity.py reads.

Run it in a separate environment with TensorFlow CPU and tf-keras (Keras 2, the Keras of IPU
TensorFlow 2; neither is ever a dependency of ipusim or of its tests)::

    /work/tfvenv/bin/pip install tf-keras   # once, beside tensorflow-cpu
    /work/tfvenv/bin/python bench/tf_parity/generate.py [--mnist-dir DIR]

It writes ``bench/tf_parity/fixtures/{layers,losses,optimizers,metrics,training}.npz``. Each file
holds cases ``<case>/<array>`` plus ``<case>/meta``, the case's JSON description (class, config,
training flag) as uint8 bytes. Inputs are drawn from NumPy generators with fixed seeds and stored
in the fixture, except the seed MLP's initial weights, which the test regenerates from the stored
seed and checks against the stored SHA-256 (the arrays alone would be a megabyte).

Groups:
* layers: forward output and the gradients of ``sum(y * dy)`` w.r.t. the inputs and the weights
  (and BatchNormalization's updated moving statistics) for every layer ipusim has.
* losses: value, and gradient of its sum w.r.t. the logits the predictions are made from, for
  every loss, reduction and sample weighting; predictions are the logits, probabilities that
  come straight from a softmax/sigmoid op inside ``tf.function`` (Keras then uses the logits),
  or probabilities that do not (``softmax(x) + 0``).
* optimizers: 20 updates of two variables from a fixed gradient sequence, Keras' default
  hyper-parameters (legacy optimizer_v2, as IPU TensorFlow's Keras), plus momentum, Nesterov,
  centred, AMSGrad, clipping and decay variants.
* metrics: ``result()`` after each of three ``update_state`` calls.
* training: 64 ``train_on_batch`` steps of the seed MLP and of the MNIST CNN (without dropout,
  whose masks no two frameworks share) from fixed weights and batches of the MNIST test split,
  with SGD(momentum=0.9), RMSprop, Adam and Adagrad: the loss of every step and a summary of the
  final weights.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import training_models  # noqa: E402
from training_models import mlp_initial_weights, weights_digest  # noqa: E402

try:
    import tf_keras as keras  # noqa: E402
except ImportError as exc:  # pragma: no cover - environment check
    raise SystemExit(
        "generate.py needs tf-keras (Keras 2, as IPU TensorFlow has): pip install tf-keras"
    ) from exc

OUT = Path(__file__).resolve().parent / "fixtures"
MLP_SEED = 20240515
SAMPLES_PER_WEIGHT = 256


class Cases:
    """Collects arrays per case and writes one compressed .npz."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, name: str, meta: dict, **arrays: object) -> None:
        if any(key.startswith(f"{name}/") for key in self.arrays):
            raise ValueError(f"duplicate case {name!r}")
        self.arrays[f"{name}/meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        for key, value in arrays.items():
            self.arrays[f"{name}/{key}"] = np.asarray(value)

    def write(self, filename: str) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / filename
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **self.arrays)
        tmp.replace(path)
        cases = sum(1 for k in self.arrays if k.endswith("/meta"))
        print(f"{path.name}: {cases} cases, {path.stat().st_size / 1024:.0f} KiB")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(
        int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    )


# ---------------------------------------------------------------------------------- layers
LAYER_CASES: list[tuple[str, str, dict, tuple, bool]] = [
    # (case name, class, config, input shape (or list of shapes), training)
    ("dense_linear", "Dense", {"units": 5}, (4, 6), True),
    ("dense_relu", "Dense", {"units": 5, "activation": "relu"}, (4, 6), True),
    (
        "dense_sigmoid_nobias",
        "Dense",
        {"units": 3, "activation": "sigmoid", "use_bias": False},
        (4, 6),
        True,
    ),
    ("dense_tanh_3d", "Dense", {"units": 4, "activation": "tanh"}, (2, 3, 6), True),
    ("dense_softmax", "Dense", {"units": 5, "activation": "softmax"}, (4, 6), True),
    ("dense_softplus", "Dense", {"units": 5, "activation": "softplus"}, (4, 6), True),
    ("dense_gelu", "Dense", {"units": 5, "activation": "gelu"}, (4, 6), True),
    ("dense_swish", "Dense", {"units": 5, "activation": "swish"}, (4, 6), True),
    ("dense_exponential", "Dense", {"units": 5, "activation": "exponential"}, (4, 6), True),
    ("conv_valid", "Conv2D", {"filters": 4, "kernel_size": 3}, (2, 7, 6, 3), True),
    (
        "conv_same_stride2_relu",
        "Conv2D",
        {"filters": 5, "kernel_size": 3, "strides": 2, "padding": "same", "activation": "relu"},
        (2, 7, 8, 3),
        True,
    ),
    (
        "conv_dilated",
        "Conv2D",
        {"filters": 3, "kernel_size": 3, "dilation_rate": 2},
        (1, 9, 9, 2),
        True,
    ),
    (
        "conv_rect_same",
        "Conv2D",
        {"filters": 4, "kernel_size": (2, 3), "strides": (1, 2), "padding": "same"},
        (2, 5, 7, 3),
        True,
    ),
    ("maxpool_2", "MaxPooling2D", {"pool_size": 2}, (2, 6, 6, 3), True),
    (
        "maxpool_3_s2_same",
        "MaxPooling2D",
        {"pool_size": 3, "strides": 2, "padding": "same"},
        (2, 7, 6, 2),
        True,
    ),
    ("avgpool_2", "AveragePooling2D", {"pool_size": 2}, (2, 6, 6, 3), True),
    (
        "avgpool_3_s2_same",
        "AveragePooling2D",
        {"pool_size": 3, "strides": 2, "padding": "same"},
        (2, 7, 6, 2),
        True,
    ),
    ("global_avgpool", "GlobalAveragePooling2D", {}, (2, 5, 4, 3), True),
    ("global_maxpool", "GlobalMaxPooling2D", {}, (2, 5, 4, 3), True),
    ("batchnorm_2d_train", "BatchNormalization", {}, (8, 5), True),
    ("batchnorm_2d_infer", "BatchNormalization", {}, (8, 5), False),
    ("batchnorm_4d_train", "BatchNormalization", {"momentum": 0.9}, (4, 3, 3, 5), True),
    ("batchnorm_4d_infer", "BatchNormalization", {"epsilon": 0.01}, (4, 3, 3, 5), False),
    ("layernorm", "LayerNormalization", {}, (4, 6), True),
    ("layernorm_3d", "LayerNormalization", {"epsilon": 1e-5}, (2, 3, 6), True),
    ("flatten", "Flatten", {}, (2, 3, 4, 2), True),
    ("reshape", "Reshape", {"target_shape": (4, 6)}, (2, 24), True),
    ("activation_relu", "Activation", {"activation": "relu"}, (4, 6), True),
    ("activation_sigmoid", "Activation", {"activation": "sigmoid"}, (4, 6), True),
    ("activation_tanh", "Activation", {"activation": "tanh"}, (4, 6), True),
    ("activation_softmax", "Activation", {"activation": "softmax"}, (4, 6), True),
    ("activation_log_softmax", "Activation", {"activation": "log_softmax"}, (4, 6), True),
    ("activation_gelu", "Activation", {"activation": "gelu"}, (4, 6), True),
    ("activation_softplus", "Activation", {"activation": "softplus"}, (4, 6), True),
    ("activation_swish", "Activation", {"activation": "swish"}, (4, 6), True),
    ("relu_layer", "ReLU", {}, (4, 6), True),
    ("relu6_leaky", "ReLU", {"max_value": 6.0, "negative_slope": 0.1}, (4, 6), True),
    ("softmax_layer", "Softmax", {}, (4, 6), True),
    ("dropout_inference", "Dropout", {"rate": 0.5}, (4, 6), False),
    ("embedding", "Embedding", {"input_dim": 10, "output_dim": 4}, (3, 5), True),
    ("add", "Add", {}, [(3, 4), (3, 4)], True),
    ("subtract", "Subtract", {}, [(3, 4), (3, 4)], True),
    ("multiply", "Multiply", {}, [(3, 4), (3, 4)], True),
    ("average", "Average", {}, [(3, 4), (3, 4)], True),
    ("maximum", "Maximum", {}, [(3, 4), (3, 4)], True),
    ("minimum", "Minimum", {}, [(3, 4), (3, 4)], True),
    ("concatenate", "Concatenate", {}, [(3, 4), (3, 2)], True),
]


def _random_weights(layer: keras.layers.Layer, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for w in layer.weights:
        name = w.name.split("/")[-1]
        if name.startswith(("moving_variance", "gamma")):
            out.append(rng.uniform(0.5, 1.5, w.shape).astype(np.float32))
        else:
            out.append((0.4 * rng.standard_normal(w.shape)).astype(np.float32))
    return out


def layers() -> Cases:
    cases = Cases()
    for name, cls, config, shape, training in LAYER_CASES:
        rng = _rng("layer/" + name)
        shapes = shape if isinstance(shape, list) else [shape]
        if cls == "Embedding":
            xs = [rng.integers(0, config["input_dim"], shapes[0]).astype(np.int32)]
        else:
            xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        layer = getattr(keras.layers, cls)(**config)
        tensors = [tf.constant(x) for x in xs]
        arg = tensors if len(tensors) > 1 else tensors[0]
        layer(arg)  # build
        weights = _random_weights(layer, rng)
        layer.set_weights(weights)
        with tf.GradientTape(persistent=True) as tape:
            for t in tensors:
                if t.dtype.is_floating:
                    tape.watch(t)
            y = layer(arg, training=training)
            dy = rng.standard_normal(y.shape).astype(np.float32)
            objective = tf.reduce_sum(y * dy)
        arrays: dict[str, object] = {"y": y.numpy(), "dy": dy}
        for i, (x, t) in enumerate(zip(xs, tensors)):
            arrays[f"x{i}"] = x
            if t.dtype.is_floating:
                arrays[f"dx{i}"] = tape.gradient(objective, t).numpy()
        for i, w in enumerate(weights):
            arrays[f"w{i}"] = w
        for i, v in enumerate(layer.trainable_weights):
            grad = tape.gradient(objective, v)
            arrays[f"dw{i}"] = tf.convert_to_tensor(grad).numpy()
        for i, v in enumerate(layer.non_trainable_weights):
            arrays[f"state{i}"] = v.numpy()
        meta = {"class": cls, "config": config, "inputs": len(xs), "training": training}
        cases.add(name, meta, **arrays)
    return cases


# ---------------------------------------------------------------------------------- losses
def losses() -> Cases:
    cases = Cases()
    specs = [
        ("sparse_cce_logits", "SparseCategoricalCrossentropy", {"from_logits": True}, "sparse"),
        ("sparse_cce_probs", "SparseCategoricalCrossentropy", {}, "sparse_probs"),
        ("sparse_cce_softmax_op", "SparseCategoricalCrossentropy", {}, "sparse_softmax"),
        ("cce_logits", "CategoricalCrossentropy", {"from_logits": True}, "onehot"),
        ("cce_probs", "CategoricalCrossentropy", {}, "onehot_probs"),
        ("cce_softmax_op", "CategoricalCrossentropy", {}, "onehot_softmax"),
        (
            "cce_smoothing",
            "CategoricalCrossentropy",
            {"from_logits": True, "label_smoothing": 0.2},
            "onehot",
        ),
        ("bce_logits", "BinaryCrossentropy", {"from_logits": True}, "binary"),
        ("bce_probs", "BinaryCrossentropy", {}, "binary_probs"),
        ("bce_sigmoid_op", "BinaryCrossentropy", {}, "binary_sigmoid"),
        ("bce_smoothing", "BinaryCrossentropy", {"label_smoothing": 0.1}, "binary_probs"),
        ("mse", "MeanSquaredError", {}, "regression"),
        ("mae", "MeanAbsoluteError", {}, "regression"),
    ]
    for base, cls, config, kind in specs:
        for reduction in ("auto", "sum", "none"):
            for weighted in (False, True):
                name = f"{base}/{reduction}" + ("/weighted" if weighted else "")
                rng = _rng("loss/" + name)
                batch, classes = 6, 4
                logits = (2 * rng.standard_normal((batch, classes))).astype(np.float32)
                if kind.startswith("sparse"):
                    y_true = rng.integers(0, classes, batch).astype(np.int32)
                elif kind.startswith("onehot"):
                    y_true = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, batch)]
                elif kind.startswith("binary"):
                    y_true = rng.integers(0, 2, (batch, classes)).astype(np.float32)
                else:
                    y_true = rng.standard_normal((batch, classes)).astype(np.float32)
                sw = rng.uniform(0.2, 2.0, batch).astype(np.float32) if weighted else None
                loss = getattr(keras.losses, cls)(reduction=reduction, **config)
                x = tf.constant(logits)
                op = kind.split("_")[-1] if "_" in kind else ""

                @tf.function(reduce_retracing=True)
                def run(x, loss=loss, op=op, y_true=y_true, sw=sw):
                    with tf.GradientTape() as tape:
                        tape.watch(x)
                        if op == "probs":  # "+ 0": not recognisably a softmax/sigmoid op
                            squash = tf.nn.sigmoid if kind.startswith("binary") else tf.nn.softmax
                            y_pred = squash(x) + 0.0
                        elif op == "softmax":
                            y_pred = tf.nn.softmax(x)
                        elif op == "sigmoid":
                            y_pred = tf.nn.sigmoid(x)
                        else:
                            y_pred = x
                        value = loss(y_true, y_pred, sample_weight=sw)
                        objective = tf.reduce_sum(value)
                    return y_pred, value, tape.gradient(objective, x)

                y_pred, value, grad = run(x)
                arrays = {
                    "logits": logits,
                    "y_true": y_true,
                    "y_pred": y_pred.numpy(),
                    "value": value.numpy(),
                    "grad": grad.numpy(),
                }
                if sw is not None:
                    arrays["sample_weight"] = sw
                meta = {
                    "class": cls,
                    "config": {**config, "reduction": reduction},
                    "prediction": op or "logits",
                }
                cases.add(name, meta, **arrays)
    return cases


# ---------------------------------------------------------------------------------- optimizers
OPTIMIZER_CASES = [
    ("sgd", "SGD", {}),
    ("sgd_momentum", "SGD", {"momentum": 0.9}),
    ("sgd_nesterov", "SGD", {"momentum": 0.9, "nesterov": True}),
    ("rmsprop", "RMSprop", {}),
    ("rmsprop_momentum", "RMSprop", {"momentum": 0.9}),
    ("rmsprop_centered", "RMSprop", {"centered": True}),
    ("rmsprop_centered_momentum", "RMSprop", {"centered": True, "momentum": 0.5}),
    ("adam", "Adam", {}),
    ("adam_amsgrad", "Adam", {"amsgrad": True}),
    ("adagrad", "Adagrad", {}),
    ("sgd_clipnorm", "SGD", {"learning_rate": 0.1, "clipnorm": 0.5}),
    ("adam_clipvalue", "Adam", {"clipvalue": 0.1}),
    ("rmsprop_global_clipnorm", "RMSprop", {"global_clipnorm": 1.0}),
    ("sgd_decay", "SGD", {"learning_rate": 0.1, "decay": 0.05, "momentum": 0.5}),
]
OPTIMIZER_STEPS = 20


def optimizers() -> Cases:
    cases = Cases()
    for name, cls, config in OPTIMIZER_CASES:
        rng = _rng("optimizer/" + name)
        inits = [
            rng.standard_normal((7, 5)).astype(np.float32),
            rng.standard_normal(3).astype(np.float32),
        ]
        grads = [
            [
                (rng.standard_normal(v.shape) * 10.0 ** rng.uniform(-2, 0.5)).astype(np.float32)
                for v in inits
            ]
            for _ in range(OPTIMIZER_STEPS)
        ]
        variables = [tf.Variable(v) for v in inits]
        opt = getattr(keras.optimizers.legacy, cls)(**config)
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
        cases.add(name, {"class": cls, "config": config}, **arrays)
    return cases


# ---------------------------------------------------------------------------------- metrics
METRIC_CASES = [
    ("accuracy", "Accuracy", {}, "labels"),
    ("binary_accuracy", "BinaryAccuracy", {}, "binary"),
    ("binary_accuracy_t07", "BinaryAccuracy", {"threshold": 0.7}, "binary"),
    ("categorical_accuracy", "CategoricalAccuracy", {}, "onehot"),
    ("sparse_categorical_accuracy", "SparseCategoricalAccuracy", {}, "sparse"),
    ("top_k", "TopKCategoricalAccuracy", {"k": 2}, "onehot"),
    ("sparse_top_k", "SparseTopKCategoricalAccuracy", {"k": 2}, "sparse"),
    ("mse", "MeanSquaredError", {}, "regression"),
    ("mae", "MeanAbsoluteError", {}, "regression"),
    ("mean", "Mean", {}, "values"),
    ("sum", "Sum", {}, "values"),
]


def metrics() -> Cases:
    cases = Cases()
    for name, cls, config, kind in METRIC_CASES:
        for weighted in (False, True):
            case = name + ("/weighted" if weighted else "")
            rng = _rng("metric/" + case)
            metric = getattr(keras.metrics, cls)(**config)
            arrays: dict[str, object] = {}
            results = []
            for b in range(3):
                batch, classes = 8, 5
                scores = rng.uniform(0, 1, (batch, classes)).astype(np.float32)
                if kind == "labels":
                    y_true = rng.integers(0, 3, batch).astype(np.float32)
                    y_pred = rng.integers(0, 3, batch).astype(np.float32)
                elif kind == "binary":
                    y_true = rng.integers(0, 2, (batch, classes)).astype(np.float32)
                    y_pred = scores
                elif kind == "onehot":
                    y_true = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, batch)]
                    y_pred = scores
                elif kind == "sparse":
                    y_true = rng.integers(0, classes, batch).astype(np.float32)
                    y_pred = scores
                elif kind == "regression":
                    y_true = rng.standard_normal((batch, classes)).astype(np.float32)
                    y_pred = rng.standard_normal((batch, classes)).astype(np.float32)
                else:
                    y_true = None
                    y_pred = rng.standard_normal(batch).astype(np.float32)
                sw = rng.uniform(0, 2, batch).astype(np.float32) if weighted else None
                if kind == "values":
                    metric.update_state(y_pred, sample_weight=sw)
                else:
                    metric.update_state(y_true, y_pred, sample_weight=sw)
                results.append(float(metric.result().numpy()))
                if y_true is not None:
                    arrays[f"y_true{b}"] = y_true
                arrays[f"y_pred{b}"] = y_pred
                if sw is not None:
                    arrays[f"sample_weight{b}"] = sw
            arrays["results"] = np.array(results, dtype=np.float64)
            cases.add(case, {"class": cls, "config": config, "kind": kind}, **arrays)
    return cases


# ---------------------------------------------------------------------------------- training
TRAIN_STEPS, TRAIN_BATCH = 64, 16
TRAIN_OPTIMIZERS = [
    ("sgd_momentum", "SGD", {"momentum": 0.9}),
    ("rmsprop", "RMSprop", {}),
    ("adam", "Adam", {}),
    ("adagrad", "Adagrad", {}),
]


def _mnist(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    n = TRAIN_STEPS * TRAIN_BATCH
    with gzip.open(directory / "t10k-images-idx3-ubyte.gz", "rb") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with gzip.open(directory / "t10k-labels-idx1-ubyte.gz", "rb") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return images.copy(), labels.copy()


def _summary(weights: list[np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per weight: the L2 norm and a fixed sample of entries (the full MLP is too big)."""
    out = {}
    for i, w in enumerate(weights):
        flat = w.reshape(-1)
        idx = rng.choice(flat.size, min(SAMPLES_PER_WEIGHT, flat.size), replace=False)
        out[f"index{i}"] = idx.astype(np.int64)
        out[f"sample{i}"] = flat[idx]
        out[f"norm{i}"] = np.float64(np.linalg.norm(flat.astype(np.float64)))
    return out


def _models() -> dict[str, tuple]:
    """Each fixture model's builder (TensorFlow's Keras) and input shape."""
    return {
        name: (lambda name=name: training_models.build(name, keras), shape)
        for name, shape in training_models.INPUT_SHAPES.items()
    }


def training(mnist_dir: Path) -> Cases:
    cases = Cases()
    images, labels = _mnist(mnist_dir)
    x_all = images.astype(np.float32) / 255.0
    y_all = labels.astype(np.int32)
    cases.add("data", {"steps": TRAIN_STEPS, "batch": TRAIN_BATCH}, images=images, labels=labels)
    for model_name, (make, shape) in _models().items():
        if model_name == "mlp":
            initial = mlp_initial_weights(MLP_SEED)
            init_arrays = {
                "seed": np.int64(MLP_SEED),
                "sha256": np.frombuffer(weights_digest(initial).encode(), np.uint8),
            }
        else:
            probe = make()
            rng = _rng("training/cnn/init")
            initial = []
            for w in probe.get_weights():
                if w.ndim == 1:
                    initial.append(rng.uniform(-0.05, 0.05, w.shape).astype(np.float32))
                else:
                    fan_in = int(np.prod(w.shape[:-1]))
                    limit = np.sqrt(6.0 / (fan_in + w.shape[-1]))
                    initial.append(rng.uniform(-limit, limit, w.shape).astype(np.float32))
            init_arrays = {f"init{i}": w for i, w in enumerate(initial)}
        cases.add(f"{model_name}/init", {"model": model_name}, **init_arrays)
        for opt_name, cls, config in TRAIN_OPTIMIZERS:
            model = make()
            model.set_weights(initial)
            model.compile(
                getattr(keras.optimizers.legacy, cls)(**config),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
            step_losses = []
            for s in range(TRAIN_STEPS):
                batch = slice(s * TRAIN_BATCH, (s + 1) * TRAIN_BATCH)
                x = x_all[batch].reshape((-1, *shape))
                step_losses.append(float(model.train_on_batch(x, y_all[batch])))
            summary = _summary(model.get_weights(), _rng(f"training/{model_name}/sample"))
            cases.add(
                f"{model_name}/{opt_name}",
                {"model": model_name, "class": cls, "config": config, "input_shape": shape},
                losses=np.array(step_losses, np.float64),
                **summary,
            )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mnist-dir",
        type=Path,
        default=Path(os.environ.get("IPUSIM_DATA_DIR", "/work/shared/data/mnist")),
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="groups to write (layers losses optimizers metrics training)",
    )
    args = parser.parse_args()
    tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(0)
    groups = {
        "layers": layers,
        "losses": losses,
        "optimizers": optimizers,
        "metrics": metrics,
        "training": lambda: training(args.mnist_dir),
    }
    for name in args.only or list(groups):
        groups[name]().write(f"{name}.npz")
    print(f"TensorFlow {tf.__version__}, tf-keras {keras.__version__}")


if __name__ == "__main__":
    main()
