"""The 1-D, 3-D and transposed spatial layers against TensorFlow's Keras (tf-keras 2), float32.

References: bench/tf_parity/fixtures/layers_spatial.npz, written by
bench/tf_parity/generate_layers_spatial.py in a separate TensorFlow environment (nothing here
imports TensorFlow): the forward output and the gradients of ``sum(y * dy)`` w.r.t. the inputs
and every weight, for each layer and its main argument variants (strides, same / valid / causal
padding, dilation, output_padding, bilinear interpolation).
"""

from __future__ import annotations

import pytest
import tf_parity_cases as parity

#: As the other layer fixtures: float32 sums in another order stay far below it.
TOLERANCE = 1e-5
CASES = parity.load("layers_spatial")


def test_fixture_covers_the_spatial_layers() -> None:
    classes = {case.meta["class"] for case in CASES}
    assert len(CASES) >= 30
    assert {"Conv1D", "Conv2DTranspose", "Conv3D", "UpSampling2D", "MaxPooling1D"} <= classes


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_spatial_layer_matches_tensorflow(case) -> None:
    results = parity.run_layer(case)
    expected = {"y"} | {k for k in case.arrays if k.startswith(("dx", "dw"))}
    assert expected == set(results)
    errors = {k: parity.relative_error(got, want) for k, (got, want) in results.items()}
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOLERANCE, f"{case.name}/{worst}: relative error {errors[worst]:.2e}"
