"""The loop a local sweep worker process runs (see :mod:`ipusim.sweep.local_pool`).

A worker talks to the sweep over one duplex pipe. Messages from the sweep:

- ``("setup", blob, run)``: ``blob`` is the pickled ``(task, environ, sys_path, cwd)`` of run
  number ``run``. The worker takes the sweep's environment, import path and working folder, so a
  worker kept from an earlier sweep behaves like a fresh one, and answers ``("ready", run)`` or
  ``("setup-failed", text, run)`` (for example a workload that this process cannot import).
- ``("run", [(index, args), ...])``: a chunk of tasks, run in order; the worker answers
  ``("done", index, value, seconds)`` after each one (``seconds``: the task's wall time, used
  only to size later chunks), or ``("raised", index, exception, seconds)`` if the task raised.
- ``("stop",)``, or the pipe closing: the worker exits.

The worker also watches the sweep process itself: when it dies (even by ``kill -9``, which runs
no clean-up), a watchdog thread sees the end of a pipe that only the sweep process holds open
and ends the worker at once, whatever the worker is running.

This module imports nothing heavy: a worker loads a workload's dependencies when it first runs it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection, wait
from typing import Any

from ipusim._threads import resize_loaded_blas

__all__ = ["PARENT_GONE_EXIT_CODE", "worker_main"]

#: Exit status of a worker that ended because the sweep process died.
PARENT_GONE_EXIT_CODE = 75


def _watch_parent(death_fd: int | None) -> None:
    """End this process as soon as the sweep process is gone (a blocking wait, no polling).

    Args:
        death_fd: the read end of a pipe whose write end only the sweep process holds (forked
            workers), or None to use :func:`multiprocessing.parent_process`'s sentinel (workers
            started by ``spawn`` or ``forkserver``, which inherit nothing else).
    """
    if death_fd is not None:
        while os.read(death_fd, 1):  # b"" once the write end is closed (EINTR: PEP 475 retries)
            pass
    else:
        import multiprocessing

        parent = multiprocessing.parent_process()
        if parent is None:  # pragma: no cover - not started by multiprocessing
            return
        wait([parent.sentinel])
    os._exit(PARENT_GONE_EXIT_CODE)


def _take_setup(blob: bytes) -> Any:
    task, environ, sys_path, cwd = pickle.loads(blob)
    if dict(os.environ) != environ:
        os.environ.clear()
        os.environ.update(environ)
    blas = environ.get("OPENBLAS_NUM_THREADS", "")
    if blas.isdigit() and int(blas) > 0:  # a forked worker's pools were sized by the sweep
        resize_loaded_blas(int(blas))
    sys.path[:] = sys_path
    if os.getcwd() != cwd:
        os.chdir(cwd)
    return task


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a RuntimeError carrying its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def worker_main(conn: Connection, death_fd: int | None) -> None:
    """Serve one pool slot until told to stop, the pipe closes or the sweep process dies.

    Args:
        conn: this worker's end of its pipe to the sweep.
        death_fd: see :func:`_watch_parent`. (A forked worker's copies of the sweep's own pipe
            ends were closed right after the fork, by ``local_pool._forget_pools_in_child``.)
    """
    # Ctrl-C reaches every process of the terminal's process group: the sweep process handles it
    # (stopping the workers); a worker must not print its own KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the sweep's handler
    threading.Thread(
        target=_watch_parent, args=(death_fd,), name="ipusim-sweep-watchdog", daemon=True
    ).start()
    task = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind = message[0]
        if kind == "stop":
            return
        if kind == "setup":
            try:
                task = _take_setup(message[1])
            except Exception as exc:
                task = None
                conn.send(("setup-failed", f"{type(exc).__name__}: {exc}", message[2]))
            else:
                conn.send(("ready", message[2]))
        elif kind == "run":
            if task is None:
                raise RuntimeError("a sweep worker was sent tasks before a successful setup")
            for index, args in message[1]:
                start = time.perf_counter()
                try:
                    value = task(*args)
                except Exception as exc:
                    conn.send(("raised", index, _sendable(exc), time.perf_counter() - start))
                else:
                    conn.send(("done", index, value, time.perf_counter() - start))
        else:
            raise RuntimeError(f"a sweep worker received an unknown message {kind!r}")
