"""The local process pool of sweeps: started once, reused, chunked, and never left behind.

One pool per process (:func:`get_pool`) serves every ``run_sweep(..., jobs=N)`` with N > 1:
worker processes start on first use and stay for the next sweep with the same ``jobs``, so a
study script that runs several sweeps pays the workers' start-up (imports, Numba's first
compilation) once. Each sweep sends its workload and its environment, import path and working
folder to the workers first (see :mod:`ipusim.sweep.worker`), the thread pools in that
environment sized for one worker's share of the cores (:func:`ipusim._threads.worker_environment`).

Scheduling: configurations go out in study order, in chunks sized from the measured cost of the
configurations already run: about :data:`CHUNK_TARGET_S` of work per chunk, and at most
1/:data:`CHUNKS_PER_WORKER` of a worker's share of what remains, so cheap configurations do not
pay a round trip each and the workers still finish together. Results come back one at a time.

Failures: a worker that dies (a segmentation fault, ``os._exit``, the out-of-memory killer) fails
only the configuration it was running, as a :class:`~ipusim.sweep.errors.WorkerDied` outcome;
the rest of its chunk goes back to the queue and a new worker takes its place.

Clean-up: the pool is shut down at interpreter exit (:mod:`atexit`), when a sweep is interrupted
(an exception, Ctrl-C, SIGTERM turned into an exception by the runner), and by
:func:`shutdown_pool`. If the sweep process is killed outright (``kill -9``), every worker sees a
pipe that only the sweep process held end, and exits.

Start method: ``fork`` on Linux when this process runs no other thread (workers then start in
milliseconds with the sweep's modules already imported, and a workload defined in the script being
run works), else ``forkserver`` (``spawn`` where that is missing). The environment variable
``IPUSIM_SWEEP_START_METHOD`` (``fork``, ``forkserver`` or ``spawn``) overrides the choice.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import multiprocessing
import os
import pickle
import sys
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from ipusim._threads import worker_environment
from ipusim.errors import IncompatibleStateError
from ipusim.sweep.errors import SweepError, WorkerDied, describe_exit
from ipusim.sweep.worker import worker_main

__all__ = [
    "CHUNKS_PER_WORKER",
    "CHUNK_TARGET_S",
    "START_METHOD_VARIABLE",
    "LocalPool",
    "chunk_size",
    "choose_start_method",
    "get_pool",
    "shutdown_pool",
]

Task = Callable[..., Any]
Item = tuple[int, tuple[Any, ...]]
Outcome = tuple[int, bool, Any]

#: Work per chunk, in seconds (E: the round trip per chunk, a pipe message each way plus the
#: sweep process writing a result file, measured 0.1–2 ms here; 0.2 s keeps it under 1 %).
CHUNK_TARGET_S = 0.2
#: A chunk holds at most 1/CHUNKS_PER_WORKER of a worker's share of the remaining tasks, so the
#: last chunks are small and the workers finish close together.
CHUNKS_PER_WORKER = 2
#: Seconds to wait for a worker to exit after it was asked to (then it is killed).
JOIN_TIMEOUT_S = 10.0
#: Workers that may die in a row without running a task before the sweep gives up.
MAX_IDLE_DEATHS = 3
#: Overrides the start method (fork, forkserver or spawn).
START_METHOD_VARIABLE = "IPUSIM_SWEEP_START_METHOD"
_START_METHODS = ("fork", "forkserver", "spawn")


def _fork_is_safe() -> bool:
    """Whether forking this process is safe: no other Python thread, no Numba thread pool.

    A thread holding a lock at the moment of the fork leaves that lock held forever in the child.
    NumPy's OpenBLAS threads are safe (OpenBLAS shuts its pool down around a fork).
    """
    if threading.active_count() > 1:
        return False
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return not (parallel is not None and getattr(parallel, "_is_initialized", False))


def choose_start_method() -> str:
    """The start method for the next worker (see the module docstring).

    Raises:
        SweepError: if ``IPUSIM_SWEEP_START_METHOD`` names an unknown or unavailable method.
    """
    available = multiprocessing.get_all_start_methods()
    forced = os.environ.get(START_METHOD_VARIABLE, "").strip()
    if forced:
        if forced not in _START_METHODS or forced not in available:
            choices = ", ".join(m for m in _START_METHODS if m in available)
            raise SweepError(
                f"{START_METHOD_VARIABLE}={forced!r} is not a start method available here; "
                f"use one of {choices}, or unset it to let the sweep choose"
            )
        return forced
    if sys.platform.startswith("linux") and "fork" in available and _fork_is_safe():
        return "fork"
    return "forkserver" if "forkserver" in available else "spawn"


def chunk_size(durations: Sequence[float], remaining: int, workers: int) -> int:
    """How many tasks to send a worker at once.

    Args:
        durations: wall seconds of the tasks finished so far (the most recent 16 are used; their
            median, so a worker's first, slow, task does not set the pace for long).
        remaining: tasks not yet sent.
        workers: workers taking part.

    Returns:
        1 while nothing is known; else ``CHUNK_TARGET_S / median`` tasks, at most
        ``ceil(remaining / (CHUNKS_PER_WORKER * workers))`` and at least 1.
    """
    if not durations or remaining <= 0:
        return 1
    recent = sorted(durations[-16:])
    typical = recent[len(recent) // 2]
    by_cost = remaining if typical <= 0 else int(CHUNK_TARGET_S / typical)
    by_balance = -(-remaining // (CHUNKS_PER_WORKER * max(workers, 1)))
    return max(1, min(by_cost, by_balance))


def _join_or_kill(process: BaseProcess) -> None:
    """Wait up to :data:`JOIN_TIMEOUT_S` for ``process`` to exit, then kill it."""
    process.join(JOIN_TIMEOUT_S)
    if process.is_alive():
        process.kill()
        process.join()


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    born: int  # the pool's run counter when the worker started
    state: str = "new"  # new | setup (waiting for "ready") | idle | busy
    generation: int = -1  # the run the worker was last set up for
    chunk: deque[Item] = field(default_factory=deque)


@dataclass
class PoolStats:
    """What the last run of a pool did (for tests and benchmarks).

    Attributes:
        tasks: tasks finished (returned, raised, or lost with a dead worker).
        chunks: chunks sent.
        workers_started: worker processes started during the run.
        workers_reused: workers kept from an earlier run that took part.
        deaths: workers that died during the run.
    """

    tasks: int = 0
    chunks: int = 0
    workers_started: int = 0
    workers_reused: int = 0
    deaths: int = 0


class LocalPool:
    """Up to ``jobs`` worker processes, kept between runs.

    Args:
        jobs: the most worker processes.
    """

    def __init__(self, jobs: int) -> None:
        if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
            raise SweepError(f"jobs must be a positive int (worker processes); got {jobs!r}")
        self.jobs = jobs
        self.stats = PoolStats()
        self._workers: list[_Worker] = []
        self._death_pipe: tuple[int, int] | None = None
        self._runs = 0
        self._owner_pid = os.getpid()
        self.forced_method = os.environ.get(START_METHOD_VARIABLE, "").strip()
        self.busy = False
        self.closed = False
        self._starting: Connection | None = None
        _LIVE_POOLS.add(self)

    # ------------------------------------------------------------------ processes
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers."""
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    def _start_worker(self, warm_up: Callable[[], Any] | None = None) -> _Worker:
        method = choose_start_method()
        if method == "fork" and warm_up is not None:
            _warm_once(warm_up)
        context = multiprocessing.get_context(method)
        parent_conn, child_conn = context.Pipe(duplex=True)
        if method == "fork":
            if self._death_pipe is None:
                self._death_pipe = os.pipe()
            death_fd: int | None = self._death_pipe[0]
        else:
            if method == "forkserver":
                context.set_forkserver_preload(["ipusim.sweep.worker"])
            death_fd = None
        # get_context(str) is typed BaseContext, which lacks Process; every context has it.
        process = context.Process(  # type: ignore[attr-defined]
            target=worker_main,
            args=(child_conn, death_fd),
            name="ipusim-sweep-worker",
            daemon=False,
        )
        self._starting = parent_conn  # closed in the child by _forget_pools_in_child
        # A forked worker's garbage collector would otherwise walk (and so copy, page by page)
        # every object inherited from this process: frozen objects are left alone (the recipe of
        # gc.freeze's documentation; measured 0.3-0.5 s of CPU less per sweep of 32 configs here).
        # This process unfreezes right after the fork.
        freeze = method == "fork" and gc.get_freeze_count() == 0
        try:
            if freeze:
                gc.freeze()
            with warnings.catch_warnings():
                # Python 3.12+ warns about forking with threads it cannot see into; the only
                # ones left when fork is chosen are OpenBLAS's, fork-safe (see _fork_is_safe).
                warnings.filterwarnings(
                    "ignore", message=r".*fork\(\)", category=DeprecationWarning
                )
                process.start()
        finally:
            if freeze:
                gc.unfreeze()
            self._starting = None
        child_conn.close()
        self.stats.workers_started += 1
        return _Worker(process=process, conn=parent_conn, born=self._runs)

    def _drop_parent_ends_in_child(self) -> None:
        """In a process forked from this one: close what only the sweep process may hold.

        The death pipe's write end (else the workers would not see the sweep die while this
        child lives) and the sweep's ends of the workers' pipes.
        """
        if self._death_pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._death_pipe[1])
        for conn in [w.conn for w in self._workers] + [self._starting]:
            if conn is not None:
                conn.close()
        self._workers, self._death_pipe, self._starting = [], None, None
        self.closed = True

    def shutdown_worker(self, worker: _Worker) -> None:
        """Stop one worker now (terminate it, wait, kill it if it lingers)."""
        if worker.process.is_alive():
            worker.process.terminate()
        _join_or_kill(worker.process)

    def _discard(self, worker: _Worker) -> None:
        worker.conn.close()
        if worker in self._workers:
            self._workers.remove(worker)

    def _reap_dead(self) -> None:
        """Forget workers that died between runs."""
        for worker in list(self._workers):
            if not worker.process.is_alive():
                worker.process.join()
                self._discard(worker)

    def shutdown(self, kill: bool = False) -> None:
        """Stop every worker: idle ones are asked to exit, busy ones (or all, with ``kill``) are
        terminated; any still alive after :data:`JOIN_TIMEOUT_S` is killed."""
        if os.getpid() != self._owner_pid:  # a forked child holds a copy: not its workers
            return
        workers, self._workers = self._workers, []
        for worker in workers:
            if kill or worker.state == "busy" or worker.state == "setup":
                if worker.process.is_alive():
                    worker.process.terminate()
            else:
                with contextlib.suppress(OSError, ValueError):
                    worker.conn.send(("stop",))
        for worker in workers:
            _join_or_kill(worker.process)
            worker.conn.close()
        if self._death_pipe is not None:
            for fd in self._death_pipe:
                os.close(fd)
            self._death_pipe = None
        self.closed = True
        _LIVE_POOLS.discard(self)

    # ------------------------------------------------------------------ running
    def run(
        self, task: Task, items: Sequence[Item], warm_up: Callable[[], Any] | None = None
    ) -> Iterator[Outcome]:
        """Run ``task(*args)`` for every ``(index, args)`` of ``items`` on the workers.

        ``warm_up`` (optional) is called once in this process before the first worker is forked
        from it (see :func:`ipusim.sweep.registry.warm_up_of`); an error in it is ignored, since
        the tasks themselves will meet and report it.

        Yields ``(index, ok, value)`` as tasks finish: ``ok`` True with the return value, or
        False with the exception the task raised or a :class:`WorkerDied`. If the caller stops
        early (an exception, closing the generator), the pool is shut down.

        Raises:
            SweepError: if the task cannot be sent to or loaded in a worker process, or workers
                keep dying before they run anything.
        """
        if self.closed:
            raise IncompatibleStateError(
                "this sweep pool was shut down; get a new one with get_pool()"
            )
        if self.busy:
            raise IncompatibleStateError("this sweep pool is already running a sweep")
        if not items:
            return
        self._runs += 1
        this_run = _Run(self, task, items, warm_up)  # a task that cannot be sent stops here
        self.busy = True
        self.stats = PoolStats()
        finished = False
        try:
            yield from this_run.outcomes()
            finished = True
        finally:
            self.busy = False
            if not finished:
                self.shutdown(kill=True)


class _Run:
    """One run of a :class:`LocalPool`: dispatching, collecting, replacing dead workers."""

    def __init__(
        self,
        pool: LocalPool,
        task: Task,
        items: Sequence[Item],
        warm_up: Callable[[], Any] | None = None,
    ) -> None:
        self.pool = pool
        self.warm_up = warm_up
        self.generation = pool._runs
        try:
            # Each worker's thread pools sized for its share of the cores (see ipusim._threads).
            environ = worker_environment(os.environ, pool.jobs)
            self.blob = pickle.dumps((task, environ, list(sys.path), os.getcwd()))
        except Exception as exc:
            raise SweepError(
                f"the workload cannot be sent to worker processes ({type(exc).__name__}: {exc}). "
                "Define the workload function at the top level of an importable module, or run "
                "with jobs=1 (-j 1) to run it in this process."
            ) from None
        self.queue: deque[Item] = deque(items)
        self.active: list[_Worker] = []
        self.outbox: deque[Outcome] = deque()
        self.durations: list[float] = []
        self.idle_deaths = 0

    # ------------------------------------------------------------------ workers
    def _set_up(self, worker: _Worker) -> None:
        worker.conn.send(("setup", self.blob, self.generation))
        worker.state, worker.generation = "setup", self.generation

    def _enlist(self) -> None:
        """Take part with up to ``jobs`` workers (no more than there are tasks)."""
        pool = self.pool
        pool._reap_dead()
        wanted = min(pool.jobs, len(self.queue))
        while len(pool._workers) < wanted:
            pool._workers.append(pool._start_worker(self.warm_up))
        for worker in pool._workers[:wanted]:
            if worker.born < self.generation:
                pool.stats.workers_reused += 1
            self._set_up(worker)
            self.active.append(worker)

    def _replace(self, worker: _Worker) -> None:
        pool = self.pool
        pool._discard(worker)
        self.active.remove(worker)
        if self.queue or any(w.chunk for w in self.active):
            fresh = pool._start_worker(self.warm_up)
            pool._workers.append(fresh)
            self._set_up(fresh)
            self.active.append(fresh)

    # ------------------------------------------------------------------ messages
    def _handle(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind in ("ready", "setup-failed"):
            if message[-1] != self.generation:
                return  # an answer to an earlier run's setup
            if kind == "ready":
                worker.state = "idle"
                return
            if worker.born < self.generation:
                # Started by an earlier sweep (a fork predating the workload's definition, an
                # import path since changed): start a fresh worker for this one.
                self.pool.shutdown_worker(worker)
                self._replace(worker)
                return
            raise SweepError(
                f"the workload cannot be loaded in a worker process ({message[1]}). Define it "
                "at the top level of a module that every process can import, or run with jobs=1 "
                "(-j 1) to run it in this process."
            )
        index, value, seconds = message[1], message[2], message[3]
        expected = worker.chunk.popleft()[0] if worker.chunk else None
        if expected != index:
            raise RuntimeError(f"sweep worker answered task {index}, expected {expected}")
        self.durations.append(float(seconds))
        self.pool.stats.tasks += 1
        self.idle_deaths = 0
        self.outbox.append((index, kind == "done", value))
        if not worker.chunk:
            worker.state = "idle"

    def _died(self, worker: _Worker) -> None:
        """Collect what a dead worker sent, fail the task it was running, requeue the rest."""
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            pass
        _join_or_kill(worker.process)  # it may have closed its pipe without exiting
        exitcode = worker.process.exitcode
        self.pool.stats.deaths += 1
        if worker.chunk:
            index, _ = worker.chunk.popleft()
            self.pool.stats.tasks += 1
            self.outbox.append((index, False, WorkerDied(exitcode)))
            self.queue.extendleft(reversed(worker.chunk))
            worker.chunk.clear()
        else:
            self.idle_deaths += 1
            if self.idle_deaths > MAX_IDLE_DEATHS:
                raise SweepError(
                    f"{self.idle_deaths} sweep worker processes in a row died before running "
                    f"anything (the last one {describe_exit(exitcode)}); run with jobs=1 (-j 1) "
                    "to see the problem in this process"
                )
        self._replace(worker)

    def _dispatch(self) -> None:
        for worker in self.active:
            if worker.state == "idle" and self.queue:
                size = chunk_size(self.durations, len(self.queue), len(self.active))
                chunk = [self.queue.popleft() for _ in range(min(size, len(self.queue)))]
                worker.chunk.extend(chunk)
                worker.state = "busy"
                worker.conn.send(("run", chunk))
                self.pool.stats.chunks += 1

    def _pending(self) -> bool:
        return bool(self.queue) or any(w.chunk for w in self.active)

    def outcomes(self) -> Iterator[Outcome]:
        self._enlist()
        while self._pending():
            self._dispatch()
            by_object: dict[Any, _Worker] = {}
            for worker in self.active:
                by_object[worker.conn] = worker
                by_object[worker.process.sentinel] = worker
            dead: set[_Worker] = set()
            for ready in wait(list(by_object)):
                worker = by_object[ready]
                if worker in dead or worker not in self.active:
                    continue
                if ready is worker.conn:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        dead.add(worker)
                        self._died(worker)
                        continue
                    self._handle(worker, message)
                else:
                    dead.add(worker)
                    self._died(worker)
            self._dispatch()  # before handing results out: the caller writes files meanwhile
            while self.outbox:
                yield self.outbox.popleft()
        # Workers still setting up (no task was left for them) answer before the next run.
        for worker in list(self.active):
            while worker.state == "setup":
                try:
                    self._handle(worker, worker.conn.recv())
                except (EOFError, OSError):
                    self.pool.shutdown_worker(worker)
                    self.pool._discard(worker)
                    break


_WARMED: set[Callable[[], Any]] = set()
#: Every pool of this process that has not been shut down (see _forget_pools_in_child).
_LIVE_POOLS: weakref.WeakSet[LocalPool] = weakref.WeakSet()


def _warm_once(warm_up: Callable[[], Any]) -> None:
    """Call ``warm_up`` unless this process already did (errors are left to the tasks)."""
    if warm_up in _WARMED:
        return
    _WARMED.add(warm_up)
    with contextlib.suppress(Exception):  # each task meets the same problem and records it
        warm_up()


_POOL: LocalPool | None = None
_POOL_LOCK = threading.Lock()


def get_pool(jobs: int) -> LocalPool:
    """This process's pool of ``jobs`` workers, started on first use and kept for reuse.

    A pool of another size, or started under another ``IPUSIM_SWEEP_START_METHOD``, is shut down
    and replaced. While the shared pool runs a sweep (another
    thread), a private pool is returned; the caller shuts that one down after use (see
    :func:`ipusim.sweep.pools.run_local`).
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and (_POOL.closed or _POOL._owner_pid != os.getpid()):
            _POOL = None
        if _POOL is not None and _POOL.busy:
            return LocalPool(jobs)
        forced = os.environ.get(START_METHOD_VARIABLE, "").strip()
        if _POOL is not None and (_POOL.jobs != jobs or _POOL.forced_method != forced):
            _POOL.shutdown()
            _POOL = None
        if _POOL is None:
            _POOL = LocalPool(jobs)
        return _POOL


def is_shared(pool: LocalPool) -> bool:
    """Whether ``pool`` is the one :func:`get_pool` keeps."""
    return pool is _POOL


def shutdown_pool() -> None:
    """Stop this process's sweep workers (they start again on the next sweep)."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown()


def _forget_pools_in_child() -> None:
    """After any fork of this process (a worker, or the program's own): the pools and their
    workers belong to the parent."""
    global _POOL, _POOL_LOCK
    for pool in list(_LIVE_POOLS):
        pool._drop_parent_ends_in_child()
    _LIVE_POOLS.clear()
    _POOL = None
    _POOL_LOCK = threading.Lock()


atexit.register(shutdown_pool)
os.register_at_fork(after_in_child=_forget_pools_in_child)
