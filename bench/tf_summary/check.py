"""Read event files with TensorBoard's own EventAccumulator and compare two log folders.

Run in the TensorFlow environment (with the tensorboard package)::

    /work/tfvenv/bin/python bench/tf_summary/check.py bench/tf_summary/fixtures OUT_DIR

For every run (``summary``, ``keras/train``, ``keras/validation``; each folder's event file)
it loads both folders' files with ``EventAccumulator`` and prints, per run, the tags TensorBoard
finds by plugin, and whether the two agree on tags, steps and tensor shapes and dtypes, and,
for ``summary`` (same inputs), on the values (images: decoded pixels).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RUNS = ("summary", "keras/train", "keras/validation")


def _load(folder: Path):
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(folder), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    return acc


def _tensors(acc) -> dict:
    import tensorflow as tf
    from tensorboard.util import tensor_util

    out = {}
    for tag in acc.Tags()["tensors"]:
        rows = []
        for ev in acc.Tensors(tag):
            array = tensor_util.make_ndarray(ev.tensor_proto)
            if array.dtype == object and array.size > 2:  # width, height, PNGs
                array = [tf.io.decode_png(b).numpy().tobytes() for b in array[2:]]
            rows.append((ev.step, array))
        out[tag] = rows
    return out


def _same(a, b, values: bool) -> bool:
    import numpy as np

    if a.keys() != b.keys():
        return False
    for tag in a:
        if [s for s, _ in a[tag]] != [s for s, _ in b[tag]]:
            return False
        for (_, x), (_, y) in zip(a[tag], b[tag], strict=True):
            if isinstance(x, list) != isinstance(y, list):
                return False
            if isinstance(x, list):
                if values and x != y:
                    return False
            elif x.shape != y.shape or x.dtype != y.dtype or values and not np.array_equal(x, y):
                return False
    return True


def main(argv: list[str]) -> int:
    reference, ours = Path(argv[0]), Path(argv[1])
    ok = True
    for run in RUNS:
        a, b = _load(reference / run), _load(ours / run)
        ta, tb = _tensors(a), _tensors(b)
        same = _same(ta, tb, values=run == "summary")
        ok &= same
        plugins = sorted(b.PluginTagToContent("scalars")) if b.PluginTagToContent("scalars") else []
        print(
            f"{run}: {len(tb)} tags read by EventAccumulator from ipusim's file "
            f"({sum(len(v) for v in tb.values())} events; scalars: {plugins}); "
            f"same as TensorFlow's: {same}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
