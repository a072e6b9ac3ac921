"""The errors of sweeps: an invalid study or output folder, and a worker process that died."""

from __future__ import annotations

import signal

from ipusim.errors import ConfigurationError

__all__ = ["SweepError", "WorkerDied", "describe_exit"]


class SweepError(ConfigurationError):
    """An invalid study, workload or output folder (the message says what to change); a
    :class:`~ipusim.errors.ConfigurationError`, so the CLI reports it as a user mistake."""


def describe_exit(exitcode: int | None) -> str:
    """How a process ended, from :attr:`multiprocessing.Process.exitcode`, in words.

    Args:
        exitcode: the exit status, minus the signal number for a process killed by a signal,
            or None if the status is unknown.
    """
    if exitcode is None:
        return "ended without an exit status"
    if exitcode >= 0:
        return f"exited with status {exitcode} without returning a result"
    number = -exitcode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    text = f"was killed by {name}"
    reason = signal.strsignal(number) if hasattr(signal, "strsignal") else None
    if reason:
        text += f" ({reason})"
    if number == signal.SIGKILL:
        text += "; the system's out-of-memory killer sends this signal, as does kill -9"
    return text


class WorkerDied(RuntimeError):
    """A worker process of a local sweep died while it ran a configuration.

    Attributes:
        exitcode: the process's exit status (minus the signal number if a signal killed it).
    """

    def __init__(self, exitcode: int | None, message: str = "") -> None:
        self.exitcode = exitcode
        super().__init__(message or f"the worker process {describe_exit(exitcode)}")

    def __reduce__(self) -> tuple[type[WorkerDied], tuple[int | None, str]]:
        return (type(self), (self.exitcode, str(self)))  # keep exitcode through pickling
