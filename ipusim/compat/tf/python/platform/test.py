"""``tensorflow.python.platform.test`` (``tf.test``): TensorFlow's unit-test helpers over unittest.

``TestCase`` is TensorFlow's ``TensorFlowTestCase`` for eager TF2 code: ``setUp`` seeds Python's,
NumPy's and ipusim's random streams with TensorFlow's ``DEFAULT_GRAPH_SEED`` (87654321), the
array assertions compare NumPy values of tensors (nested structures element by element, with
TensorFlow's default tolerances ``rtol = atol = 1e-6``), ``evaluate`` returns NumPy values and
``get_temp_dir`` a fresh folder per test. ``main`` runs the calling module's tests with
unittest (TensorFlow runs absl's, which is unittest underneath). ``mock`` is ``unittest.mock``.
The TF1 session helpers (``session``, ``cached_session``) raise :class:`UnsupportedError`.
S: tensorflow/python/platform/test.py, googletest.py and framework/test_util.py (TF 2.21).
"""

from __future__ import annotations

import atexit
import math
import os
import random
import shutil
import sys
import tempfile
import unittest
from typing import Any
from unittest import mock

import numpy as np

from ipusim.errors import ConfigurationError, UnsupportedError
from ipusim.keras.engine.nest import map_structure

__all__ = [
    "TestCase",
    "get_temp_dir",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_built_with_gpu_support",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_gpu_available",
    "main",
    "mock",
]

#: S: tensorflow/python/framework/random_seed.py ``DEFAULT_GRAPH_SEED``.
DEFAULT_GRAPH_SEED = 87654321
_TEMP: dict[str, str] = {}


def main(argv: list[str] | None = None) -> Any:
    """Run the tests of the ``__main__`` module (exits with unittest's status, as TF's)."""
    return unittest.main(module="__main__", argv=argv if argv is not None else list(sys.argv))


def get_temp_dir() -> str:
    """One temporary folder for the process's tests (removed at exit)."""
    if "dir" not in _TEMP:
        folder = tempfile.mkdtemp(prefix="tf_test_", dir=os.environ.get("TEST_TMPDIR") or None)
        atexit.register(shutil.rmtree, folder, True)
        _TEMP["dir"] = folder
    return _TEMP["dir"]


def is_built_with_cuda() -> bool:
    """False: ipusim simulates IPUs only (also ``is_built_with_rocm`` / ``_gpu_support``)."""
    return False


is_built_with_rocm = is_built_with_gpu_support = is_built_with_cuda


def is_built_with_xla() -> bool:
    """True: IPU TensorFlow compiles every device program through XLA."""
    return True


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """False: there is no GPU."""
    del cuda_only, min_cuda_compute_capability
    return False


def gpu_device_name() -> str:
    """``""``: there is no GPU."""
    return ""


def _array(value: Any) -> np.ndarray:
    numpy = getattr(value, "numpy", None)
    return np.asarray(numpy() if callable(numpy) else value)


def _numeric(value: Any) -> np.ndarray | None:
    """``value`` as a numeric array, or None when it is a structure of unequal parts."""
    try:
        array = np.asarray(value)
    except ValueError:
        return None
    return array if array.dtype.kind in "biufc" else None


class TestCase(unittest.TestCase):
    """``tf.test.TestCase`` (see the module docstring)."""

    def setUp(self) -> None:
        super().setUp()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        from ipusim.compat.tf import random as tf_random

        tf_random.set_seed(DEFAULT_GRAPH_SEED)
        self._tempdir: str | None = None
        if self.id().endswith(".test_session"):  # TF1's helper, named like a test
            self.skipTest("Not a test.")

    def get_temp_dir(self) -> str:
        """A folder of this test's own (the same one for every call in the test)."""
        tempdir: str | None = getattr(self, "_tempdir", None)
        if tempdir is None:
            tempdir = self._tempdir = tempfile.mkdtemp(dir=get_temp_dir())
        return tempdir

    def evaluate(self, tensors: Any) -> Any:
        """The NumPy values of ``tensors`` (a tensor or a nest of them)."""
        return map_structure(_array, tensors)

    def session(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(
            "tf.test.TestCase.session: TF1 sessions are not simulated by ipusim; evaluate eager "
            "tensors with self.evaluate(...) instead"
        )

    cached_session = test_session = session

    # ------------------------------------------------------------------ assertions
    def assertAllClose(
        self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6, msg: str | None = None
    ) -> None:
        """Nested structures (dicts, lists, tuples) of arrays are element-wise close, by the rule
        of ``numpy.allclose``; NaNs compare equal."""
        if isinstance(a, dict) != isinstance(b, dict):
            raise ConfigurationError(
                f"Can't compare dict to non-dict, a{a!r} vs b{b!r}. {msg or ''}"
            )
        if isinstance(a, dict):
            self.assertEqual(set(a), set(b), msg)
            for key in a:
                self.assertAllClose(a[key], b[key], rtol, atol, msg)
            return
        lists = isinstance(a, list | tuple) and isinstance(b, list | tuple)
        if lists and (_numeric(a) is None or _numeric(b) is None):  # not arrays: recurse
            if len(a) != len(b):
                raise ConfigurationError(f"Mismatched length: a{len(a)} vs b{len(b)}. {msg or ''}")
            for x, y in zip(a, b, strict=True):
                self.assertAllClose(x, y, rtol, atol, msg)
            return
        x, y = _array(a), _array(b)
        self.assertEqual(x.shape, y.shape, f"Shape mismatch: expected {x.shape}, got {y.shape}")
        np.testing.assert_allclose(y, x, rtol=rtol, atol=atol, err_msg=msg or "", equal_nan=True)

    def assertNotAllClose(
        self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6, msg: str | None = None
    ) -> None:
        """The opposite of :meth:`assertAllClose`."""
        try:
            self.assertAllClose(a, b, rtol, atol, msg)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements. " + (msg or ""))

    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:
        """Same shape and values (NaN equals NaN for floats)."""
        x, y = _array(a), _array(b)
        self.assertEqual(x.shape, y.shape, f"Shape mismatch: expected {x.shape}, got {y.shape}.")
        np.testing.assert_array_equal(x, y, err_msg=msg or "")

    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:
        """``|f1 - f2| <= err``."""
        f1, f2 = float(np.squeeze(f1)), float(np.squeeze(f2))
        if f1 != f2:
            diff = math.fabs(f1 - f2)
            note = f" ({msg})" if msg is not None else ""
            self.assertTrue(
                diff <= err, f"{f1:f} != {f2:f} +/- {err:f} (difference: {diff:g}){note}"
            )

    def assertArrayNear(
        self, farray1: Any, farray2: Any, err: float, msg: str | None = None
    ) -> None:
        """Element-wise :meth:`assertNear` of two equally long sequences."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2, strict=True):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:
        self.assertGreater(np.min(_array(a)), comparison_target)

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:
        self.assertLess(np.max(_array(a)), comparison_target)

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:
        self.assertGreaterEqual(np.min(_array(a)), comparison_target)

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:
        self.assertLessEqual(np.max(_array(a)), comparison_target)

    def assertShapeEqual(self, input_a: Any, input_b: Any, msg: str | None = None) -> None:
        """Two values have the same shape."""
        self.assertEqual(_array(input_a).shape, tuple(np.shape(input_b)), msg=msg)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:
        """Every element of ``target`` has dtype ``expected_dtype``."""
        self.assertEqual(
            _array(target).dtype, np.dtype(getattr(expected_dtype, "name", expected_dtype))
        )
