"""``ipusim demo``: train the seed MLP of the IPU Keras guide on a simulated GC200.

It reports the model's real held-out accuracy, the simulated throughput, utilisation and memory,
and writes a Chrome/Perfetto trace.

It runs offline. With MNIST available (``IPUSIM_DATA_DIR`` or ``~/.keras/datasets``) it uses the
official test split as 8,000 training and 2,000 held-out images; otherwise it uses synthetic,
MNIST-shaped data and says so on every line that reports a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ipusim import keras
from ipusim.data import mnist
from ipusim.errors import InputDataError


@dataclass(frozen=True)
class DemoData:
    """Train / held-out arrays and where they came from."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_holdout: np.ndarray
    y_holdout: np.ndarray
    source: str  # "MNIST test split" or "SYNTHETIC"


def synthetic_mnist(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-shaped uint8 images: ten fixed random prototypes plus noise, labels 0-9."""
    rng = np.random.default_rng(seed)
    prototypes = rng.uniform(0, 255, size=(10, 28, 28))
    labels = rng.integers(0, 10, size=n).astype(np.uint8)
    noise = rng.normal(0, 96, size=(n, 28, 28))
    images = np.clip(prototypes[labels] + noise, 0, 255).astype(np.uint8)
    return images, labels


def load_demo_data(n_train: int = 8000, n_holdout: int = 2000) -> DemoData:
    """The MNIST test split as train/held-out, or synthetic data when MNIST is not on disk."""
    try:
        x, y = mnist.load_data(split="test", download=False)
        source = "MNIST test split"
    except mnist.DatasetNotFoundError:
        x, y = synthetic_mnist(n_train + n_holdout)
        source = "SYNTHETIC"
    if len(x) < n_train + n_holdout:
        raise InputDataError(f"need {n_train + n_holdout} images, the data has {len(x)}")
    x = x.astype(np.float32) / 255.0
    return DemoData(
        x[:n_train],
        y[:n_train],
        x[n_train : n_train + n_holdout],
        y[n_train : n_train + n_holdout],
        source,
    )


def seed_mlp() -> keras.Sequential:
    """The model of the IPU Keras guide: Flatten, Dense 256 relu, Dense 128 relu, Dense 10."""
    return keras.Sequential(
        [
            keras.layers.Flatten(),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


def run_demo(
    epochs: int = 5,
    batch_size: int = 32,
    steps_per_execution: int = 50,
    verbose: int = 2,
    output: str | Path = "ipusim_demo",
    print_fn: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Train the seed MLP on one simulated GC200; write the trace; print the reports.

    The guide's example compiles ``SparseCategoricalCrossentropy()`` on raw logits; the demo passes
    ``from_logits=True``, which is what that model's last layer produces.

    Args:
        epochs: training epochs.
        batch_size: micro-batch size.
        steps_per_execution: steps the IPU runs per host round trip.
        verbose: Keras verbosity of fit.
        output: folder for ``trace.json`` (open it in Perfetto or chrome://tracing) and the
            report files.
    """
    from ipusim import IPUConfig, IPUStrategy

    keras.utils.set_random_seed(0)
    data = load_demo_data()
    label = "" if data.source != "SYNTHETIC" else " [SYNTHETIC DATA: MNIST not found]"
    print_fn(
        f"ipusim demo: seed MLP on {data.source} ({len(data.x_train)} train / "
        f"{len(data.x_holdout)} held out), batch {batch_size}, {epochs} epochs, "
        f"steps_per_execution {steps_per_execution}, one simulated GC200{label}"
    )
    config = IPUConfig()
    config.auto_select_ipus = 1
    config.configure_ipu_system()
    with IPUStrategy().scope():
        model = seed_mlp()
        model.compile(
            optimizer="rmsprop",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=steps_per_execution,
        )
        history = model.fit(
            data.x_train, data.y_train, batch_size=batch_size, epochs=epochs, verbose=verbose
        )
        report = history.simulation
        # 2,000 held-out images in batches of 40: the IPU needs equal batches and whole
        # executions (50 steps).
        loss, accuracy = model.evaluate(data.x_holdout, data.y_holdout, batch_size=40, verbose=0)
    folder = Path(output)
    report.save(folder)
    print_fn(f"held-out accuracy: {accuracy:.4f}  loss: {loss:.4f}{label}")
    print_fn(report.summary())
    print_fn(
        f"trace: {folder / 'trace.json'} (open it in https://ui.perfetto.dev or "
        "chrome://tracing); reports: " + str(folder)
    )
    return {
        "source": data.source,
        "accuracy": accuracy,
        "loss": loss,
        "history": history.history,
        "report": report,
        "folder": folder,
    }
