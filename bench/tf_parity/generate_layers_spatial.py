"""Write the TensorFlow Keras fixtures of the 1-D, 3-D and transposed spatial layers.

Run in the TensorFlow environment (as bench/tf_parity/generate.py, whose case loop it reuses)::

    /work/tfvenv/bin/python bench/tf_parity/generate_layers_spatial.py

It writes ``bench/tf_parity/fixtures/layers_spatial.npz`` in the format of ``layers.npz``: per
case the inputs, random weights, the forward output and the gradients of ``sum(y * dy)`` w.r.t.
the inputs and every weight. tests/numerics/test_tf_parity_spatial.py compares ipusim to it.
It also writes ``layers_spatial_signatures.json``: every argument of each layer class the cases
use (and their aliases' targets) with its default (``repr``), which
tests/keras/test_layers_spatial.py checks ipusim's classes against.
"""

from __future__ import annotations

import inspect
import json

import generate  # noqa: E402  (sets the TensorFlow environment variables first)
import tensorflow as tf  # noqa: E402

S1 = (2, 11, 3)  # (batch, steps, channels)
S2 = (2, 5, 6, 3)  # (batch, height, width, channels)
S3 = (2, 5, 6, 4, 2)  # (batch, depth, height, width, channels)

CASES: list[tuple[str, str, dict, tuple, bool]] = [
    # (case name, class, config, input shape, training)
    ("conv1d_valid", "Conv1D", {"filters": 4, "kernel_size": 3}, S1, True),
    (
        "conv1d_same_s2",
        "Conv1D",
        {"filters": 4, "kernel_size": 3, "strides": 2, "padding": "same"},
        S1,
        True,
    ),
    (
        "conv1d_causal_d2",
        "Conv1D",
        {
            "filters": 3,
            "kernel_size": 3,
            "padding": "causal",
            "dilation_rate": 2,
            "activation": "relu",
        },
        S1,
        True,
    ),
    (
        "conv1d_groups",
        "Conv1D",
        {"filters": 4, "kernel_size": 2, "groups": 2, "use_bias": False},
        (2, 7, 4),
        True,
    ),
    (
        "separable1d",
        "SeparableConv1D",
        {"filters": 4, "kernel_size": 3, "depth_multiplier": 2, "padding": "same"},
        S1,
        True,
    ),
    (
        "depthwise1d_same_s2",
        "DepthwiseConv1D",
        {"kernel_size": 3, "strides": 2, "padding": "same", "depth_multiplier": 2},
        S1,
        True,
    ),
    (
        "separable1d_causal",
        "SeparableConv1D",
        {"filters": 3, "kernel_size": 2, "padding": "causal", "dilation_rate": 2},
        S1,
        True,
    ),
    ("conv1dT_s2", "Conv1DTranspose", {"filters": 4, "kernel_size": 3, "strides": 2}, S1, True),
    (
        "conv1dT_same_op",
        "Conv1DTranspose",
        {"filters": 2, "kernel_size": 4, "strides": 3, "padding": "same", "output_padding": 1},
        S1,
        True,
    ),
    ("conv2dT_valid", "Conv2DTranspose", {"filters": 4, "kernel_size": 3}, S2, True),
    (
        "conv2dT_same_s2",
        "Conv2DTranspose",
        {"filters": 3, "kernel_size": 3, "strides": 2, "padding": "same", "activation": "relu"},
        S2,
        True,
    ),
    (
        "conv2dT_valid_s2_op1",
        "Conv2DTranspose",
        {"filters": 3, "kernel_size": (3, 2), "strides": 2, "output_padding": 1},
        S2,
        True,
    ),
    (
        "conv2dT_dilated",
        "Conv2DTranspose",
        {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"},
        S2,
        True,
    ),
    ("conv3d_valid", "Conv3D", {"filters": 3, "kernel_size": 2}, S3, True),
    (
        "conv3d_same_s2",
        "Conv3D",
        {"filters": 4, "kernel_size": (3, 3, 2), "strides": 2, "padding": "same"},
        S3,
        True,
    ),
    (
        "conv3d_dilated",
        "Conv3D",
        {"filters": 2, "kernel_size": (2, 2, 1), "dilation_rate": 2},
        S3,
        True,
    ),
    (
        "conv3dT_s2_same",
        "Conv3DTranspose",
        {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"},
        S3,
        True,
    ),
    (
        "conv3dT_valid_op",
        "Conv3DTranspose",
        {"filters": 3, "kernel_size": 2, "strides": (2, 1, 2), "output_padding": (1, 0, 0)},
        S3,
        True,
    ),
    ("maxpool1d", "MaxPooling1D", {}, S1, True),
    (
        "maxpool1d_3_s2_same",
        "MaxPooling1D",
        {"pool_size": 3, "strides": 2, "padding": "same"},
        S1,
        True,
    ),
    ("avgpool1d", "AveragePooling1D", {"pool_size": 3}, S1, True),
    (
        "avgpool1d_same",
        "AveragePooling1D",
        {"pool_size": 4, "strides": 3, "padding": "same"},
        S1,
        True,
    ),
    ("maxpool3d", "MaxPooling3D", {}, S3, True),
    (
        "maxpool3d_same",
        "MaxPooling3D",
        {"pool_size": (3, 2, 3), "strides": 2, "padding": "same"},
        S3,
        True,
    ),
    ("avgpool3d", "AveragePooling3D", {"pool_size": (2, 3, 2), "strides": (1, 2, 2)}, S3, True),
    (
        "avgpool3d_same",
        "AveragePooling3D",
        {"pool_size": 3, "strides": 2, "padding": "same"},
        S3,
        True,
    ),
    ("global_avg1d", "GlobalAveragePooling1D", {}, S1, True),
    ("global_max1d_keep", "GlobalMaxPooling1D", {"keepdims": True}, S1, True),
    ("global_avg3d_keep", "GlobalAveragePooling3D", {"keepdims": True}, S3, True),
    ("global_max3d", "GlobalMaxPooling3D", {}, S3, True),
    ("cropping1d", "Cropping1D", {"cropping": (2, 3)}, S1, True),
    ("cropping2d", "Cropping2D", {"cropping": ((1, 0), (2, 1))}, S2, True),
    ("cropping3d", "Cropping3D", {"cropping": 1}, S3, True),
    ("zeropad1d", "ZeroPadding1D", {"padding": (1, 3)}, S1, True),
    ("zeropad3d", "ZeroPadding3D", {"padding": ((1, 0), (0, 2), (1, 1))}, S3, True),
    ("upsample1d", "UpSampling1D", {"size": 3}, S1, True),
    ("upsample2d_nearest", "UpSampling2D", {"size": (2, 3)}, S2, True),
    (
        "upsample2d_bilinear",
        "UpSampling2D",
        {"size": (3, 2), "interpolation": "bilinear"},
        S2,
        True,
    ),
    ("locally1d", "LocallyConnected1D", {"filters": 3, "kernel_size": 3, "strides": 2}, S1, True),
    (
        "locally2d_relu",
        "LocallyConnected2D",
        {"filters": 2, "kernel_size": (2, 3), "strides": (1, 2), "activation": "relu"},
        S2,
        True,
    ),
    ("permute", "Permute", {"dims": (3, 1, 2)}, S2, True),
    ("repeat_vector", "RepeatVector", {"n": 3}, (4, 5), True),
    ("upsample3d", "UpSampling3D", {"size": (2, 1, 3)}, S3, True),
]


def signatures() -> dict[str, dict[str, str | None]]:
    """Argument name -> ``repr`` of its default (None when required), per layer class."""
    out = {}
    for cls in sorted({case[1] for case in CASES}):
        params = inspect.signature(getattr(generate.keras.layers, cls).__init__).parameters
        out[cls] = {
            p.name: None if p.default is inspect.Parameter.empty else repr(p.default)
            for p in params.values()
            if p.name not in ("self", "kwargs")
        }
    return out


def main() -> None:
    tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(0)
    generate.LAYER_CASES = CASES  # the case loop of generate.layers(), on these cases
    generate.layers().write("layers_spatial.npz")
    path = generate.OUT / "layers_spatial_signatures.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(signatures(), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    print(f"TensorFlow {tf.__version__}, tf-keras {generate.keras.__version__}")


if __name__ == "__main__":
    main()
