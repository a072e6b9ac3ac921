"""TensorFlow's own spread on the CNN training fixture: the same run under other CPU settings.

Runs in the TensorFlow environment (see generate.py)::

    /work/tfvenv/bin/python bench/tf_parity/cnn_branches.py

Replays the 64 CNN training steps of ``training.npz`` (same weights, batches and optimizers as
generate.py) under three TensorFlow CPU configurations and writes their per-step losses to
``fixtures/cnn_branches.npz`` (``<config>/<optimizer>``, plus ``meta``):

* ``eigen_default``: oneDNN off, TensorFlow's default intra-op thread count (the fixture's
  setting; on the 2-core machine the fixtures were made on, 2 threads);
* ``eigen_1thread``: oneDNN off, one intra-op thread;
* ``onednn_default``: oneDNN on (TF_ENABLE_ONEDNN_OPTS=1), default threads.

The thread count changes how TensorFlow splits its float32 reductions (for instance the bias
gradient and the K dimension of its contractions), so these are runs of the same model that
differ only in float32 summation order. bench/tf_parity/branch_report.py compares ipusim with
each of them. Every configuration runs in its own process because TF_ENABLE_ONEDNN_OPTS is
read when TensorFlow is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "eigen_default": {"TF_ENABLE_ONEDNN_OPTS": "0", "threads": 0},
    "eigen_1thread": {"TF_ENABLE_ONEDNN_OPTS": "0", "threads": 1},
    "onednn_default": {"TF_ENABLE_ONEDNN_OPTS": "1", "threads": 0},
}


def _run_one(config: str, out: Path) -> None:
    """Child process: train the four CNN runs under ``config`` and save their losses."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    sys.path.insert(0, str(HERE))
    import numpy as np
    import tensorflow as tf

    threads = CONFIGS[config]["threads"]
    if threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.experimental.enable_op_determinism()
    import generate as gen

    with np.load(HERE / "fixtures" / "training.npz") as data:
        images, labels = data["data/images"], data["data/labels"]
        initial = [data[f"cnn/init/init{i}"] for i in range(6)]
    x_all = images.astype(np.float32) / 255.0
    y_all = labels.astype(np.int32)
    make, shape = gen._models()["cnn"]
    losses = {}
    for opt_name, cls, opt_config in gen.TRAIN_OPTIMIZERS:
        model = make()
        model.set_weights(initial)
        model.compile(
            getattr(gen.keras.optimizers.legacy, cls)(**opt_config),
            gen.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        steps = []
        for s in range(gen.TRAIN_STEPS):
            part = slice(s * gen.TRAIN_BATCH, (s + 1) * gen.TRAIN_BATCH)
            steps.append(
                float(model.train_on_batch(x_all[part].reshape((-1, *shape)), y_all[part]))
            )
        losses[opt_name] = np.array(steps, np.float64)
    np.savez(out, **losses)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _run_one(sys.argv[2], Path(sys.argv[3]))
        return
    import numpy as np

    arrays: dict[str, np.ndarray] = {}
    for config, settings in CONFIGS.items():
        part = HERE / "fixtures" / f".cnn_branches.{config}.npz"
        env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": settings["TF_ENABLE_ONEDNN_OPTS"]}
        subprocess.run(
            [sys.executable, __file__, "--child", config, str(part)], env=env, check=True
        )
        with np.load(part) as data:
            for opt_name in data.files:
                arrays[f"{config}/{opt_name}"] = data[opt_name]
        part.unlink()
    import tensorflow as tf

    meta = {"tensorflow": tf.__version__, "cpu_count": os.cpu_count(), "configs": CONFIGS}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    path = HERE / "fixtures" / "cnn_branches.npz"
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    print(f"wrote {path.name}: {sorted(CONFIGS)}; TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
