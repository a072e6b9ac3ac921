"""Measure what the PopXL MNIST tutorial's host loop does per step besides ``session.run``
(row P4: graphcore/popxl-addons examples/mnist/0_Basic_Concepts/mnist.py).

Its training loop iterates a ``torch.utils.data.DataLoader`` over ``torchvision.datasets.MNIST``
(batch 8, ``num_workers=0``: in the training thread) under a ``tqdm`` bar whose description it sets
every step. Per sample the dataset makes a PIL image of the 28 x 28 uint8 digit, ``ToTensor``
scales it to float in [0, 1] with a channel axis and ``Normalize`` subtracts the mean and divides
by the standard deviation; the loader then collates the 8 samples and the loop casts them.

PyTorch is not installed here (nor needed by ipusim), so the same work is done with PIL and NumPy:
a lower bound of the real per-sample cost, which also pays PyTorch's per-operator dispatch (a few
microseconds per tensor operation: flag E in ``ipusim.data.host_cost``). tqdm is the real one when
it can be imported (``pip install --target DIR tqdm`` and PYTHONPATH=DIR), else its cost is left out.

Run: ``/work/venv/bin/python bench/host/measure_torch_loader.py``; writes
``bench/host/results/torch_mnist_loader.json``.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).parent / "results" / "torch_mnist_loader.json"
BATCH, STEPS, ROUNDS = 8, 400, 7
MEAN, STD = 0.1307, 0.3081


def _sample(images: np.ndarray, labels: np.ndarray, index: int) -> tuple[np.ndarray, int]:
    image = Image.fromarray(images[index], mode="L")  # torchvision MNIST.__getitem__
    x = np.asarray(image, dtype=np.float32)[None] / 255.0  # ToTensor
    x = (x - MEAN) / STD  # Normalize
    return x, int(labels[index])


def _steps(images: np.ndarray, labels: np.ndarray, bar_factory) -> float:
    order = np.random.default_rng(0).permutation(len(images))  # shuffle=True
    batches = range(STEPS)
    bar = bar_factory(batches) if bar_factory else batches
    start = time.perf_counter()
    for step in bar:
        picks = order[step * BATCH : (step + 1) * BATCH]
        samples = [_sample(images, labels, i) for i in picks]
        data = np.stack([s[0] for s in samples])  # default_collate
        target = np.array([s[1] for s in samples], np.int64)
        _ = (data.squeeze().astype(np.float32), target.astype(np.int32))  # the loop's casts
        if bar_factory:
            bar.set_description(f"Loss:{0.1234:0.4f}")
    return (time.perf_counter() - start) / STEPS


def main() -> None:
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (STEPS * BATCH, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, STEPS * BATCH).astype(np.uint8)
    loader = min(_steps(images, labels, None) for _ in range(ROUNDS))
    try:
        from tqdm import tqdm

        sink = io.StringIO()
        factory = lambda it: tqdm(it, total=STEPS, file=sink)  # noqa: E731
        with_bar = min(_steps(images, labels, factory) for _ in range(ROUNDS))
    except ImportError:
        with_bar = float("nan")
    result = {
        "load_average_1min": os.getloadavg()[0],
        "batch": BATCH,
        "loader_us_per_step": round(loader * 1e6, 2),
        "loader_us_per_sample": round(loader * 1e6 / BATCH, 2),
        "tqdm_us_per_step": round((with_bar - loader) * 1e6, 2),
    }
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(OUT)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
