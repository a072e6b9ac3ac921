"""Fixtures shared by the compat tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import ipusim
from ipusim.config import reset_ipu_configuration


@pytest.fixture
def one_ipu() -> Iterator[None]:
    """A fresh IPU configuration of one IPU for the test, reset afterwards."""
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    yield
    reset_ipu_configuration()
