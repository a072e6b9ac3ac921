"""SIGTERM during a sweep: stop cleanly, as Ctrl-C does, instead of dying mid-way.

Python turns SIGINT (Ctrl-C) into ``KeyboardInterrupt``, so a sweep's ``finally`` blocks stop its
workers and remove half-written files. SIGTERM (``kill PID``, a batch system's time limit) kills
the process outright by default. While a sweep runs, :func:`sigterm_raises` makes it raise
:class:`Terminated` instead, which unwinds the same way and then ends the process with the status
a SIGTERM death would report to a shell (128 + 15). A handler the program installed itself is
left alone.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Terminated", "sigterm_raises"]


class Terminated(SystemExit):
    """Raised in the main thread when SIGTERM arrives during a sweep (exit status 128 + 15)."""

    code: int  # always 128 + signum, never SystemExit's str or None

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread, default handler only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
