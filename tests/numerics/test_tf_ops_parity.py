"""ipusim's tf ops against real TensorFlow on the cases of bench/tf_parity/tf_ops_cases.py
(fixture bench/tf_parity/fixtures/tf_ops.npz, written by generate_tf_ops.py in a separate
TensorFlow environment): outputs and GradientTape gradients inside tf.function."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from ipusim.compat import tf
from ipusim.compat.keras import backend as K

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tf_parity"
_spec = importlib.util.spec_from_file_location("tf_ops_cases", BENCH / "tf_ops_cases.py")
cases = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("tf_ops_cases", cases)  # dataclasses look their module up
_spec.loader.exec_module(cases)
FIXTURE = np.load(BENCH / "fixtures" / "tf_ops.npz")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_op_case_matches_tensorflow(name):
    inputs, outs, grads = cases.run(tf, K, name)
    for key, value in inputs.items():  # the fixture was made from the same inputs
        np.testing.assert_array_equal(value, FIXTURE[f"{name}/in/{key}"])
    expected_outs = sorted(k for k in FIXTURE.files if k.startswith(f"{name}/out/"))
    assert len(outs) == len(expected_outs)
    for i, out in enumerate(outs):
        want = FIXTURE[f"{name}/out/{i}"]
        assert out.shape == want.shape, f"{name} output {i}: shape {out.shape} != {want.shape}"
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(out, want, err_msg=f"{name} output {i}")
        else:
            np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6, err_msg=f"{name} out {i}")
    for i, grad in enumerate(grads):
        want = FIXTURE[f"{name}/grad/{i}"]
        np.testing.assert_allclose(grad, want, rtol=2e-4, atol=2e-5, err_msg=f"{name} grad {i}")
