"""``keras.utils`` data helpers: ``Sequence``, ``normalize``, ``get_file`` (cache only).

``get_file`` never downloads (ipusim fetches nothing at run time): it returns the file Keras
would have cached (``IPUSIM_DATA_DIR`` first, then ``cache_dir``/``cache_subdir``, by default
``~/.keras/datasets``), checks its hash when one is given, and raises
:class:`~ipusim.errors.DatasetNotFoundError` naming where to put the file when it is absent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ipusim.data.mnist import ENV_VAR
from ipusim.errors import ConfigurationError, DatasetNotFoundError, UnsupportedError

__all__ = ["Sequence", "get_file", "normalize"]


class Sequence:
    """Base class of batch sequences (``keras.utils.Sequence``): implement ``__getitem__``
    (batch ``index`` -> ``(x, y)`` or ``(x, y, sample_weight)``) and ``__len__`` (batches)."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def on_epoch_end(self) -> None:
        """Called at the end of every epoch (shuffle here)."""

    def __iter__(self) -> Any:
        """Every batch in order."""
        for index in range(len(self)):
            yield self[index]


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """``x`` divided by its ``order``-norm along ``axis`` (zero norms left as 1), as Keras."""
    array = np.asarray(x)
    norms = np.atleast_1d(np.linalg.norm(array, order, axis))
    norms[norms == 0] = 1
    normalized: np.ndarray = array / np.expand_dims(norms, axis)
    return normalized


def _hash_matches(path: Path, file_hash: str, algorithm: str) -> bool:
    if algorithm == "auto":
        algorithm = "sha256" if len(file_hash) == 64 else "md5"
    digest = hashlib.sha256() if algorithm == "sha256" else hashlib.md5()  # noqa: S324 - Keras' own
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest() == file_hash


def _candidates(fname: str, cache_subdir: str, cache_dir: str | None) -> list[Path]:
    dirs = []
    env = os.environ.get(ENV_VAR)
    if env:
        dirs.append(Path(env).expanduser())
    base = Path(cache_dir).expanduser() if cache_dir else Path("~/.keras").expanduser()
    dirs.append(base / cache_subdir)
    return [d / fname for d in dirs]


def get_file(
    fname: str | None = None,
    origin: str | None = None,
    untar: bool = False,
    md5_hash: str | None = None,
    file_hash: str | None = None,
    cache_subdir: str = "datasets",
    hash_algorithm: str = "auto",
    extract: bool = False,
    archive_format: str = "auto",
    cache_dir: str | None = None,
) -> str:
    """The cached file ``fname`` Keras' ``get_file`` would return, without downloading.

    With ``untar`` the folder ``fname`` (extracted beside ``fname.tar.gz``) is returned, as
    Keras does; ``extract`` is refused (extracting archives is not simulated).

    Raises:
        DatasetNotFoundError: the file is not in the cache (ipusim never downloads).
        ConfigurationError: the cached file's hash differs from ``file_hash`` / ``md5_hash``.
    """
    if fname is None:
        if not origin:
            raise ConfigurationError('get_file: please specify the "origin" argument (URL)')
        fname = os.path.basename(origin.split("?")[0])
    if extract:
        raise UnsupportedError(
            "get_file(extract=True): ipusim does not extract archives; extract it into the "
            "Keras cache yourself and call get_file without extract"
        )
    wanted = file_hash or md5_hash
    algorithm = "md5" if md5_hash and not file_hash else hash_algorithm
    for path in _candidates(fname, cache_subdir, cache_dir):
        if not path.exists():
            continue
        if wanted and path.is_file() and not _hash_matches(path, wanted, algorithm):
            raise ConfigurationError(
                f"get_file: the cached {path} does not match the expected hash {wanted}; "
                "replace it with the file from the origin"
            )
        return str(path)
    places = ", ".join(str(p) for p in _candidates(fname, cache_subdir, cache_dir))
    raise DatasetNotFoundError(
        f"get_file: {fname!r} is not in the Keras cache (looked for {places}) and ipusim never "
        f"downloads. Fetch {origin or fname} on a machine with network access and put it there, "
        f"or set {ENV_VAR} to the folder holding it."
    )
