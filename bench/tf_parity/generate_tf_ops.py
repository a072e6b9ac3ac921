"""Write ``bench/tf_parity/fixtures/tf_ops.npz``: real TensorFlow's outputs and gradients for the
op cases of ``tf_ops_cases.py`` (clip_by_global_norm, top_k ties, moments, cross-entropies,
l2_normalize's epsilon, rounding, einsum, keras.backend losses...), which
``tests/numerics/test_tf_ops_parity.py`` compares ipusim with.

Run it in the TensorFlow environment (never a dependency of ipusim)::

    /work/tfvenv/bin/python bench/tf_parity/generate_tf_ops.py

Keys: ``<case>/in/<name>``, ``<case>/out/<i>``, ``<case>/grad/<i>``. Random ops are not here:
ipusim's streams are its own (splitmix64, not TensorFlow's Philox), so only their distributions
are tested (tests/compat/test_tf_ops_random_backend.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tf_ops_cases import CASES, run  # noqa: E402

OUT = Path(__file__).resolve().parent / "fixtures" / "tf_ops.npz"


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    for name in CASES:
        inputs, outs, grads = run(tf, tf_keras.backend, name)
        for key, value in inputs.items():
            arrays[f"{name}/in/{key}"] = value
        for i, value in enumerate(outs):
            arrays[f"{name}/out/{i}"] = value
        for i, value in enumerate(grads):
            arrays[f"{name}/grad/{i}"] = value
    tmp = OUT.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(OUT)
    print(f"wrote {OUT} ({len(arrays)} arrays, TensorFlow {tf.__version__})")


if __name__ == "__main__":
    main()
