"""Dump TensorFlow's per-layer activations and gradients of the parity CNN (diagnostic).

Runs in the TensorFlow environment (see generate.py)::

    /work/tfvenv/bin/python bench/tf_parity/dump_cnn_grads.py [--optimizer adam] [--out FILE]

Replays the training fixture's CNN run with one optimizer (``train_on_batch``, as generate.py)
and, before each of the chosen steps, records the weights, every layer's output (forward) and
the gradient of the loss w.r.t. every weight and every layer's output, computed by a
``tf.function`` on the same weights and batch. The .npz it writes (``step<s>/<array>``) is what
bench/tf_parity/compare_cnn_grads.py compares ipusim with element by element.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

HERE = Path(__file__).resolve().parent
CLASSES = {"sgd_momentum": "SGD", "rmsprop": "RMSprop", "adam": "Adam", "adagrad": "Adagrad"}


def _load_fixture() -> tuple[np.ndarray, np.ndarray, list[np.ndarray], int, int]:
    with np.load(HERE / "fixtures" / "training.npz") as data:
        images, labels = data["data/images"], data["data/labels"]
        init = [data[f"cnn/init/init{i}"] for i in range(6)]
    return images, labels, init, 64, 16


def _cnn() -> keras.Sequential:
    """The training fixture's CNN, as generate.py builds it."""
    import sys

    sys.path.insert(0, str(HERE))
    import generate

    make, _ = generate._models()["cnn"]
    return make()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", default="adam", choices=sorted(CLASSES))
    parser.add_argument("--steps", type=int, nargs="*", default=[0, 10, 20, 30, 40, 50, 60])
    parser.add_argument("--out", type=Path, default=Path("/tmp/tf_cnn_grads.npz"))
    parser.add_argument(
        "--threads", type=int, default=0, help="TensorFlow intra-op threads (0: its default)"
    )
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.experimental.enable_op_determinism()
    images, labels, init, steps, batch = _load_fixture()
    x_all = images.astype(np.float32) / 255.0
    y_all = labels.astype(np.int32)
    model = _cnn()
    model.set_weights(init)
    config = {"momentum": 0.9} if args.optimizer == "sgd_momentum" else {}
    model.compile(
        getattr(keras.optimizers.legacy, CLASSES[args.optimizer])(**config),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def probe(x, y):
        with tf.GradientTape() as tape:
            outs, h = [], x
            for layer in model.layers:
                if isinstance(layer, keras.layers.Conv2D):
                    pre = tf.nn.bias_add(tf.nn.conv2d(h, layer.kernel, 1, "VALID"), layer.bias)
                    tape.watch(pre)
                    outs.append(pre)
                    h = tf.nn.relu(pre)
                else:
                    h = layer(h)
                tape.watch(h)
                outs.append(h)
            loss = loss_fn(y, h)
        grads = tape.gradient(loss, [*model.trainable_weights, *outs])
        return loss, outs, grads

    out: dict[str, np.ndarray] = {}
    losses = []
    for s in range(steps):
        part = slice(s * batch, (s + 1) * batch)
        x = x_all[part].reshape(-1, 28, 28, 1)
        if s in args.steps:
            loss, outs, grads = probe(tf.constant(x), tf.constant(y_all[part]))
            for i, w in enumerate(model.get_weights()):
                out[f"step{s}/w{i}"] = w
            for i, a in enumerate(outs):
                out[f"step{s}/a{i}"] = a.numpy()
            nw = len(model.trainable_weights)
            for i, g in enumerate(grads[:nw]):
                out[f"step{s}/dw{i}"] = g.numpy()
            for i, g in enumerate(grads[nw:]):
                out[f"step{s}/da{i}"] = g.numpy()
            out[f"step{s}/loss"] = np.float32(loss.numpy())
        losses.append(float(model.train_on_batch(x, y_all[part])))
    out["losses"] = np.array(losses)
    np.savez_compressed(args.out, **out)
    print(f"wrote {args.out}; TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
