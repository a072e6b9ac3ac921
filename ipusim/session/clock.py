"""The simulated clock: what the program's own time readings say during a simulated run.

IPU programs time themselves: the Keras progress bar prints ms/step, callbacks take
``time.time()`` at the start and end of an epoch and print images/s. Inside
:func:`simulated_time` (``ipusim run`` installs it unless ``--wall-time``) those readings follow
the simulated machine instead of the CPU running the simulation:

- ``time.time()`` / ``time.time_ns()``: the wall-clock time when the block began plus the
  simulated seconds elapsed since;
- ``time.perf_counter()`` / ``time.monotonic()`` (and their ``_ns`` variants): their values when
  the block began plus the same simulated seconds;
- ``datetime.datetime.now(tz)`` / ``utcnow()`` / ``today()``: ``time.time()`` above as a
  datetime (the objects are ordinary ``datetime`` instances).

The simulated seconds advance only with device work: each simulated run (a ``strategy.run``
call, a ``fit`` / ``evaluate`` / ``predict``) moves the clock on by its simulated duration, which
includes the host's modelled per-execution work (launching the program, the round trip, the
input pipeline and callbacks as ``IPUConfig.ipusim`` and the system preset model them). Host
Python between device executions (building the model, the script's own loops, callbacks) costs no
simulated time: the clock stands still there. During ``fit`` the clock moves execution by
execution (the run is simulated once before it executes, see
:mod:`ipusim.keras.extensions.simulated_time`), so per-batch and per-epoch callbacks and the
progress bar see each execution end when the simulated IPU would end it.

Everything is restored when the block ends. :func:`real_time` gives the CPU's clock at any time.
"""

from __future__ import annotations

import contextlib
import datetime as _datetime_module
import time as _time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ipusim.trace import Report

__all__ = ["SimulatedClock", "active_clock", "real_time", "simulated_time"]

_REAL = {
    "time": _time.time,
    "time_ns": _time.time_ns,
    "perf_counter": _time.perf_counter,
    "perf_counter_ns": _time.perf_counter_ns,
    "monotonic": _time.monotonic,
    "monotonic_ns": _time.monotonic_ns,
}
_REAL_DATETIME = _datetime_module.datetime
_PS_PER_NS = 1000


def real_time() -> float:
    """The CPU's ``time.time()``, whatever the simulated clock says."""
    return _REAL["time"]()


class SimulatedClock:
    """Simulated seconds since the clock started, and the readings made from them.

    Attributes:
        elapsed_ps: simulated picoseconds since the clock started.
    """

    def __init__(self) -> None:
        self._origin_ns = {
            name: int(_REAL[name + "_ns"]()) for name in ("time", "perf_counter", "monotonic")
        }
        self.elapsed_ps = 0
        self._run_base_ps: int | None = None

    # ------------------------------------------------------------------ readings
    def reading_ns(self, name: str) -> int:
        """``time.<name>_ns()`` on the simulated clock (name: time, perf_counter, monotonic)."""
        return self._origin_ns[name] + self.elapsed_ps // _PS_PER_NS

    def reading(self, name: str) -> float:
        """``time.<name>()`` on the simulated clock, in seconds."""
        return self.reading_ns(name) / 1e9

    # ------------------------------------------------------------------ advancing
    def advance_to(self, elapsed_ps: int) -> None:
        """Move the clock to ``elapsed_ps`` simulated picoseconds (never back)."""
        self.elapsed_ps = max(self.elapsed_ps, int(elapsed_ps))

    def expect_run_from(self, base_ps: int) -> None:
        """The next report published is of a run that began at ``base_ps`` and already moved
        the clock execution by execution (a previewed ``fit``): it settles the clock at
        ``base_ps`` plus its duration instead of adding the duration again."""
        self._run_base_ps = int(base_ps)

    def __call__(self, report: Report) -> None:
        """A report was published (a :data:`~ipusim.session.ON_REPORT` hook): move on by its
        duration (from the start given to :meth:`expect_run_from`, else from now)."""
        base = self._run_base_ps if self._run_base_ps is not None else self.elapsed_ps
        self._run_base_ps = None
        self.advance_to(base + int(report.end_ps))


_clock: SimulatedClock | None = None


def active_clock() -> SimulatedClock | None:
    """The simulated clock in force, or None (the program reads the CPU's clock)."""
    return _clock


class _DatetimeType(type):
    # ``isinstance(d, datetime.datetime)`` keeps working for every datetime while patched.
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _REAL_DATETIME)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _REAL_DATETIME)


class SimulatedDatetime(_REAL_DATETIME, metaclass=_DatetimeType):
    """``datetime.datetime`` whose ``now`` / ``utcnow`` / ``today`` read the simulated clock."""

    @classmethod
    def now(  # type: ignore[override]  # returns a real datetime, as the class stands in for it
        cls, tz: _datetime_module.tzinfo | None = None
    ) -> _datetime_module.datetime:
        return _REAL_DATETIME.fromtimestamp(_time.time(), tz)

    @classmethod
    def utcnow(cls) -> _datetime_module.datetime:  # type: ignore[override]  # as now()
        return _REAL_DATETIME.fromtimestamp(_time.time(), _datetime_module.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> _datetime_module.datetime:  # type: ignore[override]  # as now()
        return cls.now()


def _patched(clock: SimulatedClock) -> dict[str, Callable[[], float]]:
    return {
        "time": lambda: clock.reading("time"),
        "time_ns": lambda: clock.reading_ns("time"),
        "perf_counter": lambda: clock.reading("perf_counter"),
        "perf_counter_ns": lambda: clock.reading_ns("perf_counter"),
        "monotonic": lambda: clock.reading("monotonic"),
        "monotonic_ns": lambda: clock.reading_ns("monotonic"),
    }


@contextlib.contextmanager
def simulated_time() -> Iterator[SimulatedClock]:
    """Within the block, ``time`` and ``datetime`` read the simulated clock (module docstring).

    Nested blocks share the outer block's clock. Yields the clock.
    """
    global _clock
    if _clock is not None:
        yield _clock
        return
    from ipusim.session.run import ON_REPORT

    clock = SimulatedClock()
    saved = {name: getattr(_time, name) for name in _REAL}
    saved_datetime = _datetime_module.datetime
    _clock = clock
    ON_REPORT.append(clock)
    for name, reading in _patched(clock).items():
        setattr(_time, name, reading)
    _datetime_module.datetime = SimulatedDatetime  # type: ignore[misc]
    try:
        yield clock
    finally:
        for name, function in saved.items():
            setattr(_time, name, function)
        _datetime_module.datetime = saved_datetime  # type: ignore[misc]
        with contextlib.suppress(ValueError):
            ON_REPORT.remove(clock)
        _clock = None
