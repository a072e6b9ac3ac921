"""Process helpers for the sweep tests that kill or signal a sweep: no sleeps, bounded waits.

Every wait here blocks on something the kernel reports (a pipe becoming readable, a process
ending, through a pidfd) with a deadline, and fails with a message saying what did not happen. The
one exception, :func:`wait_for_any_file`, polls the file system (nothing reports a file appearing
without a dependency), also with a deadline.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

#: Longest any wait in these tests may take, in seconds (a generous bound on a loaded machine).
DEADLINE_S = 60.0


def read_line(proc: subprocess.Popen, what: str, timeout: float = DEADLINE_S) -> str:
    """The next line of ``proc``'s stdout (a text pipe), waiting at most ``timeout`` seconds."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError(f"no line from the sweep within {timeout:.0f} s while waiting {what}")
    return proc.stdout.readline()


def _state(pid: int) -> str | None:
    """The process state letter from /proc (R, S, Z, ...), or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rpartition(")")[2].split()[0]


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, exited but not reaped, does not count)."""
    return _state(pid) not in (None, "Z", "X")


def descendants(pid: int) -> set[int]:
    """Every live process whose chain of parents leads to ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, p in parents.items() if p == parent and child not in found]
        found.update(children)
        frontier.extend(children)
    return {child for child in found if is_running(child)}


def wait_gone(pids: set[int], timeout: float = DEADLINE_S) -> set[int]:
    """Wait until every process of ``pids`` has ended; return those still running at the deadline.

    Uses pidfds (readable once the process has ended, whoever its parent is) so the wait is a
    blocking ``select``, not polling.
    """
    handles: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                handles[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                continue  # already gone
        deadline = time.monotonic() + timeout
        waiting = set(handles)
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(waiting), [], [], left)
            waiting -= set(ready)
        return {handles[fd] for fd in waiting if is_running(handles[fd])}
    finally:
        for fd in handles:
            os.close(fd)


def wait_for_any_file(paths: list[Path], what: str, timeout: float = DEADLINE_S) -> Path:
    """The first of ``paths`` found to be a file, polling every 10 ms for at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in paths:
            if path.is_file():
                return path
        time.sleep(0.01)
    raise AssertionError(f"no file appeared within {timeout:.0f} s while waiting {what}")
