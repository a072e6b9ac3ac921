"""``tf.string`` and ``tf.strings`` on the host, and serving exports with string host steps.

Expected values are TensorFlow's (TF 2.21 CPU, checked in the separate environment; see the
comments) or hand-computed. Strings never go to the IPU: every way of sending one raises
ipusim's UnsupportedError (a NotImplementedError).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ipusim.compat import ipu, keras, tf
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration
from ipusim.errors import InputDataError, UnsupportedError

PROGRAM = Path(__file__).resolve().parent / "programs" / "serving_string_steps.py"


@pytest.fixture(autouse=True)
def _fresh_ipu_state():
    reset_ipu_configuration()
    keras.utils.set_random_seed(0)
    yield
    reset_ipu_configuration()


def _bytes(value) -> list:
    return np.asarray(value).ravel().tolist()


def test_string_tensors_hold_utf8_bytes_and_compare_with_python_strings() -> None:
    words = tf.constant(["graphcore", "é"], dtype=tf.string)
    assert words.dtype == tf.string and tf.string == words.dtype and tf.string == "string"
    assert tf.string != tf.float32 and tf.string.name == "string" and tf.string.size == 0
    assert tf.as_dtype("string") is tf.string and tf.as_dtype(np.object_) is tf.string
    assert tf.as_dtype("float32") == tf.float32
    assert _bytes(words.numpy()) == [b"graphcore", b"\xc3\xa9"]
    assert repr(tf.constant("x")) == "<tf.Tensor: shape=(), dtype=string, numpy=b'x'>"
    first, second = tf.unstack(words)
    assert bool(first == "graphcore") and not bool(second == "graphcore")
    assert (words != b"graphcore").tolist() == [False, True]
    assert _bytes(tf.reshape(tf.stack([second, first]), [1, 2])) == [b"\xc3\xa9", b"graphcore"]
    assert bool(tf.constant("x")) and not bool(tf.constant(""))  # as TensorFlow's eager tensors
    filled = tf.constant("a", dtype=tf.string, shape=[2, 2])
    assert filled.shape == (2, 2) and _bytes(filled) == [b"a"] * 4
    spec = tf.TensorSpec(shape=(3,), dtype=tf.string, name="words")
    assert isinstance(spec, tf.TensorSpec) and spec.dtype == "string" and spec.shape == (3,)
    assert isinstance(tf.TensorSpec((2,), tf.float32), tf.TensorSpec)


def test_tf_strings_ops_match_tensorflow() -> None:
    s = tf.strings
    # Values as TensorFlow 2.21 returns them.
    assert s.length(["ab", "é"]).tolist() == [2, 2]
    assert s.length(["ab", "é"], unit="UTF8_CHAR").tolist() == [2, 1]
    assert s.join(["a", "b"], separator="-").numpy() == b"a-b"
    assert _bytes(s.join([["a", "b"], ["c", "d"]])) == [b"ac", b"bd"]
    assert s.reduce_join(["a", "b", "c"], separator=",").numpy() == b"a,b,c"
    assert _bytes(s.reduce_join([["a", "b"], ["c", "d"]], axis=1)) == [b"ab", b"cd"]
    numbers = s.to_number(["1.5", "2"])
    assert numbers.dtype == np.float32 and numbers.tolist() == [1.5, 2.0]
    assert s.to_number(["3"], out_type=tf.int32).dtype == np.int32
    assert _bytes(s.as_string([1.5, 2.0])) == [b"1.500000", b"2.000000"]
    assert _bytes(s.as_string([1.5], precision=2)) == [b"1.50"]
    assert _bytes(tf.as_string([3])) == [b"3"] and tf.as_string(True).numpy() == b"true"
    assert _bytes(s.as_string([3, 12], width=4, fill="0")) == [b"0003", b"0012"]
    assert _bytes(s.as_string([2.5], scientific=True)) == [b"2.500000e+00"]
    assert _bytes(s.as_string([2.5], shortest=True)) == [b"2.5"]
    assert _bytes(s.lower(["AbC"])) == [b"abc"]
    assert _bytes(s.upper(["aé"])) == [b"A\xc3\xa9"]  # ASCII letters only by default
    assert _bytes(s.strip(["  a b "])) == [b"a b"]
    assert s.regex_full_match(["abc", "x1"], "[a-z]+").tolist() == [True, False]
    assert _bytes(s.regex_replace(["a1b22"], "[0-9]+", "#")) == [b"a#b#"]
    assert _bytes(s.regex_replace(["a1b22"], "[0-9]", "#", replace_global=False)) == [b"a#b22"]
    assert _bytes(s.substr(["hello"], 1, 3)) == [b"ell"]
    with pytest.raises(InputDataError, match="could not correctly convert"):
        s.to_number(["x"])
    with pytest.raises(AttributeError, match="tf.strings.to_hash_bucket_fast"):
        s.to_hash_bucket_fast(["a"], 10)  # not simulated, named


def test_a_tf_function_on_strings_runs_on_the_host_outside_the_strategy() -> None:
    @tf.function
    def lengths(words):
        return tf.stack([tf.cast(tf.strings.length(w), tf.float32) for w in tf.unstack(words)])

    out = lengths(tf.constant(["ipu", "", "abcd"], dtype=tf.string))
    assert out.dtype == np.float32 and out.tolist() == [3.0, 0.0, 4.0]


def test_strings_never_go_to_the_ipu() -> None:
    config = ipu.config.IPUConfig()
    config.auto_select_ipus = 1
    config.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    words = tf.constant(["a", "b"], dtype=tf.string)

    @tf.function
    def step(x):
        return tf.strings.length(x)

    with strategy.scope():
        with pytest.raises(UnsupportedError, match="strings do not exist on the IPU"):
            strategy.run(step, args=(words,))
        with pytest.raises(NotImplementedError, match="IPUStrategy scope"):
            step(words)
    with pytest.raises(UnsupportedError, match="tf.abs does not take tf.string"):
        tf.abs(words)


def test_serving_exports_run_string_host_steps_around_the_ipu_program(tmp_path, capsys) -> None:
    result = run_script(PROGRAM, args=[str(tmp_path / "exports")], output=tmp_path / "r",
                        quiet=True)  # fmt: skip
    assert result.exit_code == 0
    out = capsys.readouterr().out
    single = next(line for line in out.splitlines() if line.startswith("SINGLE")).split()[1:]
    # words -> 100 for "ipu", else the byte length; doubled on the IPU; plus one on the host
    assert [float(v) for v in single] == [201.0, 11.0, 1.0, 9.0, 201.0]
    keras_line = next(line for line in out.splitlines() if line.startswith("KERAS")).split()
    # row sums of the parsed numbers (Dense of ones), rounded to cents half to even
    assert [float(v) for v in keras_line[1:]] == [3.75, 6.12]
    manifest = json.loads((tmp_path / "exports" / "single" / "serving.json").read_text())
    steps = manifest["host_steps"]
    assert steps["preprocessing"]["inputs"] == [{"name": "input_0", "shape": [5],
                                                 "dtype": "string"}]  # fmt: skip
    assert steps["postprocessing"]["name"] == "postprocessing_step" and not steps["stored"]
    assert manifest["inputs"][0]["dtype"] == "float32"  # the IPU program takes numbers


def test_host_step_arguments_are_checked_as_ipu_tensorflow_does(tmp_path) -> None:
    from ipusim.errors import ConfigurationError

    @tf.function
    def predict(x):
        return x * 2

    @tf.function
    def pre(words):
        return tf.cast(tf.strings.length(words), tf.float32)

    spec = (tf.TensorSpec(shape=(2,), dtype=np.float32),)
    with pytest.raises(ConfigurationError, match="preprocessing_step 'pre' has no input signature"):
        ipu.serving.export_single_step(predict, tmp_path / "a", 1, spec, preprocessing_step=pre)
    runtime = ipu.serving.export_single_step(
        predict, tmp_path / "b", 1, spec, preprocessing_step=pre,
        preprocessing_step_signature=(tf.TensorSpec(shape=(2,), dtype=tf.string),),
    )  # fmt: skip
    assert runtime(tf.constant(["ab", "c"], dtype=tf.string)).tolist() == [4.0, 2.0]
    with pytest.raises(InputDataError, match=r"shape \(2,\)"):
        runtime(tf.constant(["ab", "c", "d"], dtype=tf.string))
    assert ipu.serving.load(tmp_path / "b")(np.array([1.0, 2.0], np.float32)).tolist() == [2, 4]
