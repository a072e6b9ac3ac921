"""Shared pytest setup: make tests/ importable (for naive.py and gradcheck.py) and pin threads."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Under pytest-xdist (the README's test command) each worker process keeps its own Numba cache:
# two processes compiling different signatures of one kernel into one cache folder at once can
# overwrite each other's index entries. Set before anything imports Numba.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and "NUMBA_CACHE_DIR" not in os.environ:
    _ROOT = Path(__file__).resolve().parent.parent
    os.environ["NUMBA_CACHE_DIR"] = str(_ROOT / ".numba-cache" / _WORKER)

from ipusim.config._env import settings_restored  # noqa: E402 (after NUMBA_CACHE_DIR)

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


@pytest.fixture(autouse=True)
def _process_settings_do_not_leak():
    """A test that runs a workload's ``main`` in-process must not pass its settings on."""
    with settings_restored():
        yield


@pytest.fixture(autouse=True, scope="module")
def _each_file_starts_unconfigured():
    """Every test file starts with no IPU system configured and Keras' default dtype policy,
    whatever the files run before it in this process left active (pytest-xdist runs the
    files in an order of its own, so no file may depend on another's leftovers)."""
    from ipusim import keras
    from ipusim.config import reset_ipu_configuration

    reset_ipu_configuration()
    keras.mixed_precision.set_global_policy(None)
    yield
