"""Files ipusim writes for the user: atomically, and with the usual permissions.

A reader never sees a half-written file: the bytes go to ``.<name>.<random>.tmp`` next to the
target and replace it in one rename; on any error the temporary file is removed and an existing
target is left untouched. The temporary file is created private (``0600``, exclusively, and
registered for removal before it exists, so an interruption cannot strand it); before the rename
it is given the mode a plain ``open(path, "w")`` would have given it, ``0666`` minus the process
umask (``0644`` under the usual umask ``022``), so what the user gets is an ordinary file,
readable by the tools and people they share it with.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from ipusim.errors import ConfigurationError, DiskWriteError, FileAccessError

__all__ = [
    "as_disk_error",
    "atomic_folder",
    "atomic_output",
    "default_file_mode",
    "disk_errors",
    "write_bytes_atomic",
    "write_many_atomic",
    "write_text_atomic",
]


#: What the user can do about each disk error a write can meet.
_DISK_FIXES = {
    errno.ENOSPC: "the disk is full: free some space or write somewhere else",
    errno.EDQUOT: "the disk quota is exhausted: free some space or write somewhere else",
    errno.EROFS: "the file system is read-only: write somewhere else",
    errno.EACCES: "permission denied: make the folder writable or write somewhere else",
    errno.EPERM: "operation not permitted: make the folder writable or write somewhere else",
}


def as_disk_error(error: OSError, path: object = None) -> DiskWriteError | None:
    """``error`` as a :class:`~ipusim.errors.DiskWriteError` when it is a full disk, a
    read-only or unwritable folder (None for any other error).

    Args:
        error: the error a write raised.
        path: what was being written (default: the error's own file name).
    """
    if isinstance(error, DiskWriteError):
        return error
    fix = _DISK_FIXES.get(error.errno if error.errno is not None else -1)
    if fix is None:
        return None
    where = path if path is not None else error.filename
    disk = DiskWriteError(f"cannot write {str(where)!r}: {fix}")  # one line, no "[Errno n]"
    disk.errno = error.errno
    return disk


@contextlib.contextmanager
def disk_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a full disk, a read-only or unwritable folder met inside the block into a
    :class:`~ipusim.errors.DiskWriteError` naming ``path`` (other errors pass unchanged)."""
    try:
        yield
    except OSError as exc:
        disk = as_disk_error(exc, path)
        if disk is None or disk is exc:
            raise
        raise disk from None


def _umask() -> int:
    try:  # Linux: read it without changing it (os.umask can only be read by setting it)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_file_mode() -> int:
    """The permission bits ``open(path, "w")`` gives a new file: ``0o666`` minus the umask."""
    return 0o666 & ~_umask()


def _temporary_name(folder: Path, name: str) -> Path:
    """A fresh ``.<name>.<random>.tmp`` path in ``folder`` (not created)."""
    return folder / f".{name}.{secrets.token_hex(6)}.tmp"


def _create(staged: list[Path], folder: Path, name: str) -> int:
    """Create a private temporary file for ``name`` in ``folder`` and return its handle.

    The path joins ``staged`` before the file exists, so whoever cleans ``staged`` up removes
    it even when an interruption (Ctrl-C, SIGTERM raised as an exception) arrives between the
    file's creation and the caller learning its name.
    """
    while True:
        temp = _temporary_name(folder, name)
        staged.append(temp)
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # someone else's: never ours to remove
            staged.pop()


def _prepare_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise FileAccessError(f"cannot write into {str(folder)!r}: it exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)


def write_many_atomic(folder: str | os.PathLike[str], files: Mapping[str, bytes]) -> list[Path]:
    """Write several files into ``folder``, all staged before any is moved into place.

    Every file is first written in full to a temporary file in ``folder``; only when all are
    written are they renamed over their targets. An error while staging leaves every target as it
    was and no temporary file behind.

    Args:
        folder: the destination folder (created if missing).
        files: file name (no folder part) → complete contents.

    Returns:
        The target paths, in the order of ``files``.
    """
    folder = Path(folder)
    with disk_errors(folder):
        return _write_many(folder, files)


def _write_many(folder: Path, files: Mapping[str, bytes]) -> list[Path]:
    _prepare_folder(folder)
    mode = default_file_mode()
    staged: list[Path] = []
    try:
        for name, data in files.items():
            if Path(name).name != name:
                raise ConfigurationError(f"file name {name!r} must not contain a folder part")
            handle = _create(staged, folder, name)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(staged[-1], mode)
        targets = []
        for temp, name in zip(staged, files, strict=True):
            os.replace(temp, folder / name)
            targets.append(folder / name)
        return targets
    finally:
        for temp in staged:
            temp.unlink(missing_ok=True)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (creating the parent folder).

    Returns:
        The target path.
    """
    target = Path(path)
    write_many_atomic(target.parent, {target.name: data})
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file handle whose contents replace ``path`` when the block ends without error.

    For writers that stream (``np.savez``, a download). On an error inside the block the
    temporary file is deleted and ``path`` is left as it was.
    """
    target = Path(path)
    staged: list[Path] = []
    try:
        with disk_errors(target):
            _prepare_folder(target.parent)
            handle = _create(staged, target.parent, target.name)
            temp = staged[-1]
            with os.fdopen(handle, "wb") as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, default_file_mode())
            os.replace(temp, target)
    finally:
        for temp in staged:
            temp.unlink(missing_ok=True)


def atomic_folder(folder: str | os.PathLike[str], files: Mapping[str, bytes]) -> Path:
    """Write the files of a folder so that the folder appears complete or not at all.

    A new folder is filled aside (``.<name>.<random>.tmp`` next to it) and renamed into place
    in one step, so a full disk or an interruption leaves neither an empty nor a partial
    folder. An existing folder keeps its other files: the given ones are all staged in it
    before any replaces its old version (:func:`write_many_atomic`).

    Args:
        folder: the destination folder (its parent is created if missing).
        files: file name (no folder part) → complete contents.

    Returns:
        The folder.
    """
    folder = Path(folder)
    if folder.exists():
        write_many_atomic(folder, files)
        return folder
    with disk_errors(folder):
        _prepare_folder(folder.parent)
        aside = _temporary_name(folder.parent, folder.name)
        try:
            os.mkdir(aside, 0o777)  # the umask applies, as to any folder the user makes
            _write_many(aside, files)
            os.replace(aside, folder)
        finally:
            if aside.exists():
                shutil.rmtree(aside, ignore_errors=True)
    return folder
