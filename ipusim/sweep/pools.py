"""Where a sweep's configurations run: in this process, on a local process pool, or on Dask.

Each backend takes a task function and a list of ``(index, args)`` and yields
``(index, ok, value)`` as the tasks complete (in completion order): ``ok`` True with the task's
return value, or False with the exception that kept the task from returning (a worker process
that died, an argument that could not be sent). The caller orders the results.

The local pool itself lives in :mod:`ipusim.sweep.local_pool`.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Generator, Sequence
from typing import Any

from ipusim.sweep import local_pool
from ipusim.sweep.errors import SweepError
from ipusim.sweep.local_pool import Item, Outcome, Task

__all__ = ["default_jobs", "run_dask", "run_local", "run_serial"]

#: How long to wait for a Dask scheduler to answer, in seconds.
DASK_CONNECT_TIMEOUT_S = 30


def default_jobs() -> int:
    """Worker processes used when none are asked for: the CPU count."""
    return os.cpu_count() or 1


def run_serial(task: Task, items: Sequence[Item]) -> Generator[Outcome, None, None]:
    """Run every task in this process, one after another, in order."""
    for index, args in items:
        yield index, True, task(*args)


def check_picklable(value: Any, what: str) -> None:
    """Raise :class:`SweepError` if ``value`` cannot be sent to a worker process."""
    try:
        pickle.dumps(value)
    except Exception as exc:
        raise SweepError(
            f"{what} cannot be sent to worker processes ({type(exc).__name__}: {exc}). Define "
            "the workload function at the top level of an importable module, or run with "
            "jobs=1 (-j 1) to run it in this process."
        ) from None


def run_local(
    task: Task, items: Sequence[Item], jobs: int, warm_up: Callable[[], Any] | None = None
) -> Generator[Outcome, None, None]:
    """Run the tasks on this process's pool of ``jobs`` worker processes.

    The pool (see :mod:`ipusim.sweep.local_pool`) starts on first use and is kept for the next
    sweep; ``warm_up`` is passed to :meth:`~ipusim.sweep.local_pool.LocalPool.run`. A worker
    that dies fails only the task it was running (a
    :class:`~ipusim.sweep.errors.WorkerDied` outcome). If the caller stops early (an exception,
    ``KeyboardInterrupt``, closing the generator), the workers are stopped.
    """
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise SweepError(f"jobs must be a positive int (worker processes); got {jobs!r}")
    if not items:
        return
    pool = local_pool.get_pool(jobs)
    try:
        yield from pool.run(task, items, warm_up)
    finally:
        if not local_pool.is_shared(pool):
            pool.shutdown()


def _dask() -> tuple[Any, Any]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise SweepError(
            "running a sweep on a Dask cluster (scheduler=...) needs the `distributed` package: "
            "pip install 'dask[distributed]' (or ipusim's `dask` extra)"
        ) from None
    return Client, as_completed


def run_dask(task: Task, items: Sequence[Item], scheduler: Any) -> Generator[Outcome, None, None]:
    """Run the tasks on a Dask distributed cluster.

    Args:
        task: sent to the workers with cloudpickle (module-level functions by reference, so the
            workers must be able to import them; ipusim must be installed on every worker).
        items: the tasks' arguments.
        scheduler: the scheduler's address (``"tcp://HOST:PORT"``) or an existing
            ``distributed.Client``, which is left open.

    Each worker process runs one configuration at a time (see
    :func:`ipusim.sweep.task.execute`); start workers with ``--nthreads 1`` and scale with
    ``--nworkers``.
    """
    client_class, as_completed = _dask()
    own = not isinstance(scheduler, client_class)
    if own:
        if not isinstance(scheduler, str) or not scheduler:
            raise SweepError(
                f"scheduler must be a Dask scheduler address such as 'tcp://127.0.0.1:8786' or "
                f"a distributed.Client; got {scheduler!r}"
            )
        try:
            client = client_class(scheduler, timeout=DASK_CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise SweepError(
                f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); check the address "
                "and that `dask scheduler` is running"
            ) from None
    else:
        client = scheduler
    futures: dict[Any, int] = {}
    try:
        for index, args in items:
            futures[client.submit(task, *args, pure=False)] = index
        for future in as_completed(list(futures)):
            index = futures[future]
            try:
                yield index, True, future.result()
            except Exception as exc:  # a worker died or the task could not be sent
                yield index, False, exc
    finally:
        unfinished = [f for f in futures if not f.done()]
        if unfinished:
            client.cancel(unfinished)
        if own:
            client.close()
