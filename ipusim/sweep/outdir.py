"""A sweep's output folder: one sweep at a time, and no temporary files left from a killed one.

Result files and tables are written atomically (a temporary ``.<name>.<random>.tmp`` file in the
same folder, then a rename; see :mod:`ipusim._files`). A sweep killed during such a write
(``kill -9``, a power cut) leaves the temporary file behind. :func:`claim_output` takes the
folder for one sweep (a lock on ``.ipusim-sweep.lock``, released when the sweep ends or its
process dies) and removes the temporary files earlier sweeps left there; holding the lock, it
cannot remove a file another sweep is still writing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ipusim._files import disk_errors
from ipusim.sweep.errors import SweepError

try:  # POSIX record locks: held by this process only, released by the kernel when it dies
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["CONFIGS_FOLDER", "LOCK_NAME", "claim_output", "stray_temporary_files"]

CONFIGS_FOLDER = "configs"
LOCK_NAME = ".ipusim-sweep.lock"

#: Temporary files of the atomic writer: ``.<target name>.<random>.tmp``.
_RESULT_TEMP = re.compile(r"^\.[0-9a-f]{16}\.json\..+\.tmp$")
_TABLE_TEMP = re.compile(r"^\.results\.(parquet|csv)\..+\.tmp$")


def stray_temporary_files(output: str | os.PathLike[str]) -> list[Path]:
    """Temporary files of interrupted writes in a sweep's output folder (result files, tables)."""
    output = Path(output)
    found = []
    configs = output / CONFIGS_FOLDER
    if configs.is_dir():
        found += [p for p in configs.iterdir() if _RESULT_TEMP.match(p.name)]
    if output.is_dir():
        found += [p for p in output.iterdir() if _TABLE_TEMP.match(p.name)]
    return sorted(found)


def _lock(handle: int, output: Path) -> None:
    if fcntl is None:  # pragma: no cover - not POSIX
        return
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(handle, 32, 0).decode("ascii", "replace").strip()
        who = f" (process {holder})" if holder.isdigit() else ""
        raise SweepError(
            f"another sweep{who} is writing to {str(output)!r}; wait for it to finish, or give "
            "this one another output folder"
        ) from None


@contextmanager
def claim_output(output: str | os.PathLike[str]) -> Iterator[Path]:
    """Create ``output/configs``, hold the folder for this sweep and remove stray temporary files.

    Raises:
        SweepError: if ``output`` is a file, or another sweep is using the folder.
        DiskWriteError: if the folder cannot be made or written (read-only, full disk).
    """
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise SweepError(f"output {str(output)!r} exists and is not a folder")
    with disk_errors(output):  # a read-only or full disk: one clear error, before any run
        (output / CONFIGS_FOLDER).mkdir(parents=True, exist_ok=True)
        handle = os.open(output / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(handle, output)
        with disk_errors(output):
            os.ftruncate(handle, 0)
            os.pwrite(handle, f"{os.getpid()}\n".encode("ascii"), 0)
        for path in stray_temporary_files(output):
            path.unlink(missing_ok=True)
        yield output
    finally:
        os.close(handle)  # releases the lock
