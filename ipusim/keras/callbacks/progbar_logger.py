"""ProgbarLogger: the callback that prints Keras' progress bar during fit/evaluate/predict."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras.callbacks.callback import Callback, Logs
from ipusim.keras.progbar import Progbar


class ProgbarLogger(Callback):
    """Prints the Keras progress bar (and ``Epoch i/n`` headers when training for > 1 epoch).

    Args:
        count_mode: ``"steps"`` (what ``fit`` uses) or ``"samples"`` (counts ``logs["size"]``).
        stateful_metrics: names shown as given; others are averaged over the epoch's steps. The
            model's ``metrics`` names are added; a model without ``metrics`` has every logged
            value shown as given (ipusim's logs already hold running means).
        clock: display time source passed to :class:`~ipusim.keras.progbar.Progbar`.
    """

    def __init__(
        self,
        count_mode: str = "steps",
        stateful_metrics: Iterable[str] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__()
        if count_mode not in ("samples", "steps"):
            raise ConfigurationError(
                f"Unknown `count_mode`: {count_mode!r}; expected 'steps' or 'samples'"
            )
        self.use_steps = count_mode == "steps"
        self.stateful_metrics = set(stateful_metrics or ())
        self.clock = clock
        self.seen = 0
        self.progbar: Progbar | None = None
        self.target: int | None = None
        self.verbose = 1
        self.epochs = 1
        self._call_batch_hooks = True
        self._called_in_fit = False

    def set_params(self, params: dict[str, Any]) -> None:
        super().set_params(params)
        self.verbose = params.get("verbose", 1)
        self.epochs = params.get("epochs", 1)
        key = "steps" if self.use_steps else "samples"
        self.target = params.get(key)
        # With a known target only verbose=1 needs per-batch updates.
        self._call_batch_hooks = self.verbose == 1 or self.target is None

    def _implements_train_batch_hooks(self) -> bool:
        return self._call_batch_hooks

    _implements_test_batch_hooks = _implements_predict_batch_hooks = _implements_train_batch_hooks

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._called_in_fit = True  # validation inside fit stays silent

    def on_test_begin(self, logs: Logs | None = None) -> None:
        if not self._called_in_fit:
            self._new_progbar()

    def on_predict_begin(self, logs: Logs | None = None) -> None:
        self._new_progbar()

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self._new_progbar()
        if self.verbose and self.epochs > 1:
            print(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self._batch_update_progbar(batch, logs)

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        if not self._called_in_fit:
            self._batch_update_progbar(batch, logs)

    def on_predict_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self._batch_update_progbar(batch, None)  # outputs are not metrics

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self._finalize_progbar(logs)

    def on_test_end(self, logs: Logs | None = None) -> None:
        if not self._called_in_fit:
            self._finalize_progbar(logs)

    def on_predict_end(self, logs: Logs | None = None) -> None:
        self._finalize_progbar(logs)

    def _new_progbar(self) -> None:
        self.seen = 0
        self.progbar = None
        self._maybe_init_progbar()

    def _maybe_init_progbar(self) -> Progbar:
        metrics = getattr(self.model, "metrics", None) if self.model is not None else None
        if metrics is not None:
            self.stateful_metrics |= {m.name for m in metrics}
        if self.progbar is None:
            self.progbar = Progbar(
                target=self.target,
                verbose=self.verbose,
                stateful_metrics=self.stateful_metrics,
                unit_name="step" if self.use_steps else "sample",
                clock=self.clock,
            )
        self.progbar._update_stateful_metrics(self.stateful_metrics)
        return self.progbar

    def _items(self, progbar: Progbar, logs: Logs) -> list[tuple[str, Any]]:
        if getattr(self.model, "metrics", None) is None:
            progbar._update_stateful_metrics(logs.keys())
        return list(logs.items())

    def _batch_update_progbar(self, batch: int, logs: Logs | None) -> None:
        logs = dict(logs or {})
        progbar = self._maybe_init_progbar()
        if self.use_steps:
            self.seen = batch + 1
        else:
            size = logs.pop("size", 0)
            self.seen += logs.pop("num_steps", 1) * size
            logs.pop("batch", None)
        if self.verbose == 1:
            progbar.update(self.seen, self._items(progbar, logs), finalize=False)

    def _finalize_progbar(self, logs: Logs | None) -> None:
        logs = logs or {}
        progbar = self.progbar if self.progbar is not None else self._maybe_init_progbar()
        if self.target is None:
            self.target = self.seen
            progbar.target = self.target
        progbar.update(self.target, self._items(progbar, logs), finalize=True)
