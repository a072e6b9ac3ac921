"""Write bench/tf_parity/fixtures/layers_misc.npz: TensorFlow Keras references for the layers of
ipusim/keras/layers/{activation,noise,core_extra,dot,einsum_dense,group_normalization,attention,
multi_head_attention,wrappers,image_preprocessing,categorical}.py.

Run in the TensorFlow environment (never a dependency of ipusim)::

    /work/tfvenv/bin/python bench/tf_parity/generate_layers_misc.py

Each case stores the inputs ``x<i>`` (float inputs get gradients), boolean call arguments
``b_<name>[_<i>]``, the weights ``w<i>``, the forward output ``y``, the upstream ``dy`` and the
gradients of ``sum(y * dy)`` w.r.t. the float inputs (``dx<i>``) and the trainable weights
(``dw<i>``); ``meta`` says how the layer is built and called. Integer inputs are stored as int32 and
get no gradient. tests/numerics/test_tf_parity_layers_misc.py runs the same cases through ipusim.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from generate import Cases, _random_weights, _rng  # noqa: E402
from layers_misc_cases import CASES  # noqa: E402


def _inputs(case: dict, rng: np.random.Generator) -> list[np.ndarray]:
    xs = []
    for shape in case["inputs"]:
        if case.get("int_inputs"):
            low, high = case["int_inputs"]
            xs.append(rng.integers(low, high, shape).astype(np.int32))
        else:
            xs.append((case.get("scale", 1.0) * rng.standard_normal(shape)).astype(np.float32))
    for axis_step in case.get("zero_steps", []):  # Masking: whole time steps equal to 0
        xs[0][:, axis_step, :] = 0.0
    return xs


def _bools(case: dict, rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    out = {}
    for name, shapes in case.get("bool_kwargs", {}).items():
        arrays = []
        for shape in shapes:
            mask = rng.uniform(size=shape) < 0.7
            mask[..., 0] = True  # every row attends to something
            arrays.append(mask)
        out[name] = arrays
    return out


def _layer(case: dict) -> keras.layers.Layer:
    config = dict(case.get("config", {}))
    if "wrap" in case:
        inner = case["wrap"]
        config["layer"] = getattr(keras.layers, inner["class"])(**inner["config"])
    return getattr(keras.layers, case["class"])(**config)


def _call(layer, case: dict, tensors: list, bools: dict, training: bool):
    kwargs = dict(case.get("kwargs", {}))
    for name, arrays in bools.items():
        values = [tf.constant(a) for a in arrays]
        kwargs[name] = values if case.get("bool_list") else values[0]
    if case.get("call") == "args":
        return layer(*tensors, training=training, **kwargs)
    arg = tensors if case.get("call") == "list" else tensors[0]
    return layer(arg, training=training, **kwargs)


def run_case(case: dict) -> dict[str, np.ndarray]:
    rng = _rng("layers_misc/" + case["name"])
    xs, bools = _inputs(case, rng), _bools(case, rng)
    layer = _layer(case)
    tensors = [tf.constant(x) for x in xs]
    training = case.get("training", True)
    _call(layer, case, tensors, bools, training)  # build
    weights = _random_weights(layer, rng)
    layer.set_weights(weights)
    with tf.GradientTape(persistent=True) as tape:
        for t in tensors:
            if t.dtype.is_floating:
                tape.watch(t)
        y = tf.cast(_call(layer, case, tensors, bools, training), tf.float32)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        objective = tf.reduce_sum(y * dy)
    arrays: dict[str, object] = {"y": y.numpy(), "dy": dy}
    for i, (x, t) in enumerate(zip(xs, tensors)):
        arrays[f"x{i}"] = x
        grad = tape.gradient(objective, t) if t.dtype.is_floating else None
        if grad is not None:  # None: no gradient path (bucketized inputs)
            arrays[f"dx{i}"] = grad.numpy()
    for name, values in bools.items():
        for i, value in enumerate(values):
            arrays[f"b_{name}_{i}"] = value
    for i, w in enumerate(weights):
        arrays[f"w{i}"] = w
    for i, v in enumerate(layer.trainable_weights):
        arrays[f"dw{i}"] = tf.convert_to_tensor(tape.gradient(objective, v)).numpy()
    return arrays


def _rotation(angle: float, h: int, w: int) -> list[float]:
    cos, sin = np.cos(angle), np.sin(angle)
    x_offset = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
    y_offset = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
    return [cos, -sin, x_offset, sin, cos, y_offset, 0.0, 0.0]


def transform_case(case: dict) -> dict[str, np.ndarray]:
    """ImageProjectiveTransformV3 (what RandomRotation / Translation / Zoom call) on fixed maps."""
    rng = _rng("layers_misc/" + case["name"])
    x = rng.standard_normal(case["inputs"][0]).astype(np.float32)
    h, w = x.shape[1:3]
    maps = np.array([_rotation(a, h, w) for a in case["angles"]], np.float32)
    maps[:, 6:] = case.get("perspective", [0.0, 0.0])
    images = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(images)
        y = tf.raw_ops.ImageProjectiveTransformV3(
            images=images,
            transforms=tf.constant(maps),
            output_shape=tf.constant([h, w], tf.int32),
            fill_value=tf.constant(case["fill_value"], tf.float32),
            interpolation=case["interpolation"].upper(),
            fill_mode=case["fill_mode"].upper(),
        )
        dy = rng.standard_normal(y.shape).astype(np.float32)
        objective = tf.reduce_sum(y * dy)
    dx = tape.gradient(objective, images).numpy()
    return {"x0": x, "maps": maps, "y": y.numpy(), "dy": dy, "dx0": dx}


TRANSFORMS = [
    {
        "name": f"transform/{fill}/{interp}",
        "kind": "transform",
        "fill_mode": fill,
        "interpolation": interp,
        "fill_value": 0.5,
        "inputs": [(2, 6, 7, 2)],
        "angles": [0.4, -2.2],
    }
    for fill in ("reflect", "wrap", "constant", "nearest")
    for interp in ("bilinear", "nearest")
] + [
    {
        "name": "transform/perspective",
        "kind": "transform",
        "fill_mode": "constant",
        "interpolation": "bilinear",
        "fill_value": 0.0,
        "inputs": [(1, 5, 5, 1)],
        "angles": [0.3],
        "perspective": [0.01, -0.02],
    },
]


TEXTS = np.array(
    [
        "The cat sat on the mat.",
        "The DOG ate my homework!",
        "a cat, a dog; and a bird?",
        "Dogs don't like cats",
        "  spaces   everywhere   ",
        "unicode café CAFÉ",
    ]
)

#: String layers (host-side in IPU programs): (name, class, config, adapt, inputs).
STRING_CASES = [
    ("text_int", "TextVectorization", {"max_tokens": 12}, True, TEXTS[:4]),
    ("text_int_length", "TextVectorization", {"output_sequence_length": 6}, True, TEXTS),
    ("text_multi_hot", "TextVectorization", {"output_mode": "multi_hot"}, True, TEXTS),
    ("text_count_bigrams", "TextVectorization", {"output_mode": "count", "ngrams": 2}, True, TEXTS),
    (
        "text_lower_chars",
        "TextVectorization",
        {"standardize": "lower", "split": "character", "output_sequence_length": 10},
        True,
        TEXTS,
    ),
    (
        "text_no_standardize",
        "TextVectorization",
        {"standardize": None, "max_tokens": 9, "output_mode": "count"},
        True,
        TEXTS[:1],
    ),
    (
        "string_lookup",
        "StringLookup",
        {"vocabulary": ["b", "a", "c"]},
        False,
        np.array([["a", "z", "c"], ["b", "b", "q"]]),
    ),
    (
        "string_lookup_mask_adapt",
        "StringLookup",
        {"mask_token": "", "max_tokens": 5},
        True,
        np.array([["x", "", "y", "x"], ["z", "x", "w", "y"]]),
    ),
    (
        "string_lookup_multi_hot",
        "StringLookup",
        {"vocabulary": ["b", "a", "c"], "output_mode": "multi_hot"},
        False,
        np.array([["a", "z"], ["c", "c"]]),
    ),
]


def string_case(cls: str, config: dict, adapt: bool, inputs: np.ndarray) -> dict:
    layer = getattr(keras.layers, cls)(**config)
    if adapt:
        layer.adapt(inputs)
    y = layer(tf.constant(inputs)).numpy()
    vocabulary = np.array([str(v) for v in layer.get_vocabulary()])
    return {"inputs": inputs.astype(str), "y": y, "vocabulary": vocabulary}


def main() -> None:
    tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(0)
    cases = Cases()
    for case in CASES:
        meta = {k: v for k, v in case.items() if k != "name"}
        cases.add(case["name"], meta, **run_case(case))
    for case in TRANSFORMS:
        meta = {k: v for k, v in case.items() if k != "name"}
        cases.add(case["name"], meta, **transform_case(case))
    for name, cls, config, adapt, inputs in STRING_CASES:
        meta = {"kind": "strings", "class": cls, "config": config, "adapt": adapt}
        cases.add(f"strings/{name}", meta, **string_case(cls, config, adapt, inputs))
    cases.write("layers_misc.npz")
    print(f"TensorFlow {tf.__version__}, tf-keras {keras.__version__}")


if __name__ == "__main__":
    main()
