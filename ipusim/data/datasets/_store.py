"""Where the Keras data sets are looked for, and the record of synthetic stand-ins.

Every ``keras.datasets`` loader looks, in order, in the folder named by ``IPUSIM_DATA_DIR`` and in
Keras' cache ``~/.keras/datasets`` (or a ``cache_dir`` given to the loader, as tf.keras allows),
for the very file or folder Keras' own loader downloads (same name, same format). Nothing is ever
downloaded: when the data is absent the loader builds synthetic data with the real shapes,
dtypes, vocabulary and label ranges, announces it with a :class:`SyntheticDataWarning`, and
records it here so that every report simulated afterwards says so (``report.extra["data"]``):
timing figures are valid on synthetic data, accuracy figures are not.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from types import FrameType

import numpy as np

from ipusim.data.mnist import ENV_VAR, search_dirs

__all__ = [
    "SyntheticDataWarning",
    "data_note",
    "find",
    "record_synthetic",
    "reset_provenance",
    "search_dirs",
]


class SyntheticDataWarning(UserWarning):
    """A data set is not on disk: synthetic data with its shapes stands in (accuracy is not real)."""


#: What the loaders return: ``((x_train, y_train), (x_test, y_test))``.
Pairs = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

#: The data sets that were synthesised in this process, in the order they were first loaded.
_SYNTHETIC: list[str] = []


def find(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The first searched file or folder called ``name`` (a relative path), or None."""
    candidate = Path(name).expanduser()
    if candidate.is_absolute():
        return candidate if candidate.exists() else None
    for directory in search_dirs(cache_dir):
        path = directory / name
        if path.exists():
            return path
    return None


def record_synthetic(dataset: str, looked_for: str, cache_dir: str | None = None) -> None:
    """Announce (a :class:`SyntheticDataWarning`) and record that ``dataset`` is synthetic."""
    places = ", ".join(str(d) for d in search_dirs(cache_dir))
    warnings.warn(
        f"[ipusim] keras.datasets.{dataset}: {looked_for} is not on disk (searched {places}; "
        f"set {ENV_VAR} to a folder holding the file Keras downloads). Using SYNTHETIC data "
        "with the real shapes, dtypes and label ranges: simulated timing is valid, accuracy "
        "and loss figures are not. Nothing is downloaded.",
        SyntheticDataWarning,
        stacklevel=_caller_level(),
    )
    if dataset not in _SYNTHETIC:
        _SYNTHETIC.append(dataset)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside ipusim (the script's call of load_data)."""
    package = str(Path(__file__).resolve().parents[2])
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def data_note() -> str | None:
    """For reports: which data sets are synthetic in this process (None when none is)."""
    if not _SYNTHETIC:
        return None
    return f"synthetic ({', '.join(_SYNTHETIC)}): timing valid, accuracy not"


def reset_provenance() -> None:
    """Forget the synthetic data sets recorded so far (a new run starts)."""
    _SYNTHETIC.clear()
