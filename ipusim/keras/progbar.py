"""Keras' console progress bar (``tf.keras.utils.Progbar``, TensorFlow 2.4–2.6 format).

``verbose=1``::

      37/100 [==========>...................] - ETA: 1s - loss: 0.3412 - accuracy: 0.9012
     100/100 [==============================] - 1s 5ms/step - loss: 0.3000 - accuracy: 0.9000

``verbose=2`` prints one line when the bar finishes::

     100/100 - 1s - loss: 0.3000 - accuracy: 0.9000

On an interactive terminal (or in Jupyter) the ``verbose=1`` bar is redrawn in place with ``\\r``;
otherwise only the final line of each bar is printed, so logs written to files stay readable. The
clock is injectable (``clock=``) so tests and simulations control the displayed times; it is only
ever used for display.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import TextIO

import numpy as np


def _is_interactive(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty()) if isatty is not None else False
    except ValueError:  # closed stream
        tty = False
    return tty or "ipykernel" in sys.modules or "PYCHARM_HOSTED" in os.environ


def _format_value(avg: float, verbose: int) -> str:
    # Keras: verbose=1 switches to scientific notation for |avg| <= 1e-3, verbose=2 for avg <= 1e-3.
    small = abs(avg) <= 1e-3 if verbose == 1 else avg <= 1e-3
    return f" {avg:.4e}" if small else f" {avg:.4f}"


class Progbar:
    """A progress bar for a known (or unknown, ``target=None``) number of steps.

    Args:
        target: total number of steps, or None if unknown.
        width: bar width in characters.
        verbose: 0 silent, 1 bar, 2 one line when finished.
        interval: minimum seconds between redraws of an unfinished bar.
        stateful_metrics: names displayed as given; other values are averaged over the steps.
        unit_name: ``"step"`` or ``"sample"`` (for the time per unit).
        clock: seconds source for display (defaults to ``time.perf_counter``).
        dynamic_display: redraw in place; defaults to whether the output is interactive.
        stream: output stream; defaults to ``sys.stdout`` looked up at each write.
    """

    def __init__(
        self,
        target: int | None,
        width: int = 30,
        verbose: int = 1,
        interval: float = 0.05,
        stateful_metrics: Iterable[str] | None = None,
        unit_name: str = "step",
        clock: Callable[[], float] | None = None,
        dynamic_display: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self._clock = clock or time.perf_counter
        self._stream = stream
        self._dynamic_display = dynamic_display
        self._total_width = 0
        self._seen_so_far = 0
        #: Per name: [sum of value * steps (an array for array results), steps counted].
        self._values: dict[str, list[float | np.ndarray]] = {}
        self._values_order: list[str] = []
        self._start = self._clock()
        self._last_update: float | None = None
        self._time_after_first_step: float | None = None

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def update(
        self,
        current: int,
        values: Iterable[tuple[str, float | np.ndarray]] | None = None,
        finalize: bool | None = None,
    ) -> None:
        """Record progress up to step ``current`` (1-based count of steps done).

        Args:
            current: steps completed so far.
            values: ``(name, value)`` pairs for this step.
            finalize: whether this is the last update; defaults to ``current >= target``.
        """
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for name, raw in values or ():
            if name not in self._values_order:
                self._values_order.append(name)
            # Array results (F1Score per class, several thresholds) are averaged elementwise
            # and shown as their mean, as Keras' Progbar does.
            value = float(raw) if np.ndim(raw) == 0 else np.asarray(raw, dtype=np.float64)
            if name in self.stateful_metrics:
                self._values[name] = [value, 1]
            else:
                # At least 1 so that a repeated `current` (epoch end after the last batch) counts.
                base = max(current - self._seen_so_far, 1)
                if name in self._values:
                    self._values[name][0] += value * base
                    self._values[name][1] += base
                else:
                    self._values[name] = [value * base, base]
        self._seen_so_far = current

        now = self._clock()
        time_per_unit = self._estimate_step_duration(current, now)
        if current == 1:
            self._time_after_first_step = now
        if self.verbose == 1:
            self._draw(current, now, finalize, time_per_unit)
        elif self.verbose == 2 and finalize:
            self._write_summary(current, now)
        self._last_update = now

    def add(self, n: int, values: Iterable[tuple[str, float | np.ndarray]] | None = None) -> None:
        """Advance by ``n`` steps."""
        self.update(self._seen_so_far + n, values)

    def _update_stateful_metrics(self, stateful_metrics: Iterable[str]) -> None:
        self.stateful_metrics = self.stateful_metrics.union(stateful_metrics)

    # --- rendering -------------------------------------------------------------------------------

    def _dynamic(self) -> bool:
        if self._dynamic_display is None:
            self._dynamic_display = _is_interactive(self.stream)
        return self._dynamic_display

    def _bar(self, current: int) -> str:
        if self.target is None:
            return f"{current:7d}/Unknown"
        digits = int(math.log10(self.target)) + 1 if self.target > 0 else 1
        bar = f"{current:{digits}d}/{self.target} ["
        progress = current / self.target if self.target else 1.0
        filled = int(self.width * progress)
        if filled > 0:
            bar += "=" * (filled - 1) + (">" if current < self.target else "=")
        bar += "." * (self.width - filled) + "]"
        return bar

    def _metrics_text(self) -> str:
        text = ""
        for name in self._values_order:
            total, count = self._values[name]
            average = float(np.mean(total / max(1, count)))
            text += f" - {name}:" + _format_value(average, self.verbose)
        return text

    def _draw(self, current: int, now: float, finalize: bool, time_per_unit: float) -> None:
        dynamic = self._dynamic()
        if not finalize:
            if not dynamic:
                return  # non-interactive output: only the final line of each bar
            if self._last_update is not None and now - self._last_update < self.interval:
                return
        prev_total_width = self._total_width
        out = ("\b" * prev_total_width + "\r") if dynamic else ""
        bar = self._bar(current)
        self._total_width = len(bar)
        if self.target is None or finalize:
            info = f" - {now - self._start:.0f}s" + self._time_per_unit_text(time_per_unit)
        else:
            info = f" - ETA: {self._eta_text(time_per_unit * (self.target - current))}"
        info += self._metrics_text()
        self._total_width += len(info)
        if prev_total_width > self._total_width:
            info += " " * (prev_total_width - self._total_width)
        if finalize:
            info += "\n"
        self.stream.write(out + bar + info)
        self.stream.flush()

    def _write_summary(self, current: int, now: float) -> None:
        target = self.target if self.target is not None else current
        digits = int(math.log10(target)) + 1 if target > 0 else 1
        info = f"{current:{digits}d}/{target} - {now - self._start:.0f}s" + self._metrics_text()
        self.stream.write(info + "\n")
        self.stream.flush()

    def _time_per_unit_text(self, time_per_unit: float) -> str:
        if time_per_unit >= 1 or time_per_unit == 0:
            return f" {time_per_unit:.0f}s/{self.unit_name}"
        if time_per_unit >= 1e-3:
            return f" {time_per_unit * 1e3:.0f}ms/{self.unit_name}"
        return f" {time_per_unit * 1e6:.0f}us/{self.unit_name}"

    @staticmethod
    def _eta_text(eta: float) -> str:
        if eta > 3600:
            return f"{int(eta // 3600)}:{int((eta % 3600) // 60):02d}:{int(eta % 60):02d}"
        if eta > 60:
            return f"{int(eta // 60)}:{int(eta % 60):02d}"
        return f"{int(eta)}s"

    def _estimate_step_duration(self, current: int, now: float) -> float:
        # The first step (compilation, warm-up) is left out of the estimate once later steps exist.
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            return (now - self._time_after_first_step) / (current - 1)
        return (now - self._start) / current
