"""ResNet-50 (v1.5 bottleneck blocks, Keras layer names) training throughput on simulated IPUs.

Layer names follow ``keras.applications.ResNet50`` (``conv4_block2_add`` ...), so the documented
pipeline split ("everything up to conv4_block2_add on the first stage") works as written.
Padding is ``same`` where Keras uses explicit ZeroPadding2D layers (same shapes).

Run: ``python workloads/resnet50.py --stages 2 --split conv4_block2_add --timing-only``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ipusim  # noqa: E402
from ipusim import keras  # noqa: E402
from ipusim.keras import ops  # noqa: E402
from workloads import common  # noqa: E402

L = keras.layers


def _block(x: Any, filters: int, stride: int, shortcut_conv: bool, name: str) -> Any:
    if shortcut_conv:
        shortcut = L.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = L.BatchNormalization(epsilon=1.001e-5, name=f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    x = L.Conv2D(filters, 1, name=f"{name}_1_conv")(x)
    x = L.BatchNormalization(epsilon=1.001e-5, name=f"{name}_1_bn")(x)
    x = L.Activation("relu", name=f"{name}_1_relu")(x)
    x = L.Conv2D(filters, 3, strides=stride, padding="same", name=f"{name}_2_conv")(x)
    x = L.BatchNormalization(epsilon=1.001e-5, name=f"{name}_2_bn")(x)
    x = L.Activation("relu", name=f"{name}_2_relu")(x)
    x = L.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = L.BatchNormalization(epsilon=1.001e-5, name=f"{name}_3_bn")(x)
    x = L.Add(name=f"{name}_add")([shortcut, x])
    return L.Activation("relu", name=f"{name}_out")(x)


def resnet50(
    image_size: int = 224,
    classes: int = 1000,
    micro_batch: int | None = None,
    eight_bit_io: bool = False,
) -> keras.Model:
    """ResNet-50 for ``image_size`` x ``image_size`` RGB images.

    With ``eight_bit_io`` the images arrive as uint8 (a quarter of the host traffic, as
    Graphcore's MLPerf runs do) and are cast on the IPU.
    """
    dtype = "uint8" if eight_bit_io else None
    inputs = keras.Input(
        (image_size, image_size, 3), batch_size=micro_batch, name="input_1", dtype=dtype
    )
    x = ops.cast(inputs, "float32") if eight_bit_io else inputs
    x = L.Conv2D(64, 7, strides=2, padding="same", name="conv1_conv")(x)
    x = L.BatchNormalization(epsilon=1.001e-5, name="conv1_bn")(x)
    x = L.Activation("relu", name="conv1_relu")(x)
    x = L.MaxPooling2D(3, strides=2, padding="same", name="pool1_pool")(x)
    for stage, (filters, blocks, stride) in enumerate(
        [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=2
    ):
        for block in range(1, blocks + 1):
            x = _block(
                x, filters, stride if block == 1 else 1, block == 1, f"conv{stage}_block{block}"
            )
    x = L.GlobalAveragePooling2D(name="avg_pool")(x)
    outputs = L.Dense(classes, name="predictions")(x)
    return keras.Model(inputs, outputs, name="resnet50")


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "ResNet-50 training throughput on simulated IPUs",
        micro_batch=16,
        accumulation=8,
        stages=1,
        steps=16,
        precision="fp16.16",
    )
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--eight-bit-io", action="store_true", help="uint8 images, cast on the IPU")
    p.add_argument(
        "--split",
        nargs="*",
        default=["conv4_block2_add"],
        help="layer names after which a new pipeline stage starts",
    )
    args = common.parse(p, argv)
    if args.stages > 1 and len(args.split) != args.stages - 1:
        p.error(f"--stages {args.stages} needs {args.stages - 1} --split layer names")
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = resnet50(args.image_size, eight_bit_io=args.eight_bit_io)
        if args.stages > 1:
            common.assign_stages_by_split(model, args.split)
        common.pipeline(model, args)
        model.compile(
            optimizer=common.optimizer(args) or keras.optimizers.SGD(0.1, momentum=0.9),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=common.metrics(args),
            steps_per_execution=common.steps_per_execution(args),
        )
        images = np.zeros(
            (args.micro_batch, args.image_size, args.image_size, 3),
            np.uint8 if args.eight_bit_io else np.float32,
        )
        labels = np.zeros(args.micro_batch, np.int32)
        common.run(model, args, common.synthetic(images, labels))
    return common.report(model, args)


if __name__ == "__main__":
    main()
