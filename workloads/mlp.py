"""A multi-layer perceptron on MNIST-shaped data: 784 inputs, hidden layers of the given widths,
10 outputs (the MLPs of Graphcore's PopXL and Keras tutorials), trained while the IPU system is
simulated.

Run: ``python workloads/mlp.py --hidden 512 512 512 --activation gelu --timing-only``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ipusim  # noqa: E402
from ipusim import keras  # noqa: E402
from workloads import common  # noqa: E402
from workloads.mnist_mlp import train  # noqa: E402


def mlp(hidden: list[int], activation: str = "relu") -> keras.Sequential:
    """Flatten, then Dense layers of ``hidden`` widths with ``activation``, then Dense 10."""
    layers: list[Any] = [keras.Input((28, 28)), keras.layers.Flatten()]
    layers += [keras.layers.Dense(width, activation=activation) for width in hidden]
    layers.append(keras.layers.Dense(10))
    return keras.Sequential(layers)


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "MLP on MNIST-shaped data, simulated", micro_batch=8, accumulation=1, stages=1, steps=64
    )
    p.add_argument("--hidden", type=int, nargs="+", default=[512, 512, 512])
    p.add_argument("--activation", default="relu")
    args = common.parse(p, argv)
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = mlp(args.hidden, args.activation)
        common.pipeline(model, args)
        train(model, args)
    return common.report(model, args)


if __name__ == "__main__":
    main()
