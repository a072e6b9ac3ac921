"""CallbackList: dispatches every hook to a list of callbacks (adding History and ProgbarLogger)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ipusim.errors import InvalidTypeError
from ipusim.keras.callbacks.builtin import History
from ipusim.keras.callbacks.callback import Callback, Logs
from ipusim.keras.callbacks.progbar_logger import ProgbarLogger


def _flatten(callbacks: Any) -> list[Callback]:
    if callbacks is None:
        return []
    if isinstance(callbacks, CallbackList):
        return list(callbacks.callbacks)
    if isinstance(callbacks, list | tuple):
        return [cb for item in callbacks for cb in _flatten(item)]
    if not isinstance(callbacks, Callback):
        raise InvalidTypeError(
            f"callbacks must be Callback instances (or a list of them), received "
            f"{type(callbacks).__name__}: {callbacks!r}"
        )
    return [callbacks]


def _indexed(hook: str, gate: str | None = None) -> Callable[..., None]:
    """A :class:`CallbackList` method calling ``hook(index, logs)`` on every callback (a batch
    hook: only when the flag ``gate`` says some callback overrides that family)."""

    def dispatch(self: CallbackList, index: int, logs: Logs | None = None) -> None:
        if gate is None or getattr(self, gate):
            self._call(hook, index, logs=logs)

    return dispatch


def _whole(hook: str) -> Callable[..., None]:
    """A :class:`CallbackList` method calling ``hook(logs)`` on every callback."""

    def dispatch(self: CallbackList, logs: Logs | None = None) -> None:
        self._call(hook, logs=logs)

    return dispatch


class CallbackList:
    """Calls every hook on each callback in turn.

    Args:
        callbacks: a callback or a (nested) list of callbacks.
        add_history: append a :class:`History` unless one is already in ``callbacks``.
        add_progbar: put a ``ProgbarLogger(count_mode="steps")`` first unless one is present.
        model: the model, passed to every callback (and given ``model.history``).
        **params: passed to every callback's ``set_params`` (``verbose``, ``epochs``, ``steps``).
    """

    def __init__(
        self,
        callbacks: Any = None,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ) -> None:
        self.callbacks = _flatten(callbacks)
        self.model = None
        self.params: dict[str, Any] = {}
        self._progbar: ProgbarLogger | None = None
        self._history: History | None = None
        for cb in self.callbacks:
            if isinstance(cb, ProgbarLogger):
                self._progbar = cb
            elif isinstance(cb, History):
                self._history = cb
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger(count_mode="steps")
            self.callbacks.insert(0, self._progbar)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)
        self._refresh_hook_flags()

    def _refresh_hook_flags(self) -> None:
        # Batch hooks are skipped entirely when no callback overrides them (as Keras does).
        self._call_train_batch = any(cb._implements_train_batch_hooks() for cb in self.callbacks)
        self._call_test_batch = any(cb._implements_test_batch_hooks() for cb in self.callbacks)
        self._call_predict_batch = any(
            cb._implements_predict_batch_hooks() for cb in self.callbacks
        )

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)
        self._refresh_hook_flags()

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)
        self._refresh_hook_flags()

    def set_model(self, model: Any) -> None:
        self.model = model
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)

    def _call(self, hook: str, *args: Any, logs: Logs | None) -> None:
        # One copy per dispatch, shared by the callbacks (later ones see earlier ones' additions,
        # the caller's dict is left alone).
        shared = {} if logs is None else dict(logs)
        for cb in self.callbacks:
            getattr(cb, hook)(*args, shared)

    on_batch_begin = _indexed("on_train_batch_begin", "_call_train_batch")
    on_batch_end = _indexed("on_train_batch_end", "_call_train_batch")
    on_epoch_begin = _indexed("on_epoch_begin")
    on_epoch_end = _indexed("on_epoch_end")
    on_train_batch_begin = _indexed("on_train_batch_begin", "_call_train_batch")
    on_train_batch_end = _indexed("on_train_batch_end", "_call_train_batch")
    on_test_batch_begin = _indexed("on_test_batch_begin", "_call_test_batch")
    on_test_batch_end = _indexed("on_test_batch_end", "_call_test_batch")
    on_predict_batch_begin = _indexed("on_predict_batch_begin", "_call_predict_batch")
    on_predict_batch_end = _indexed("on_predict_batch_end", "_call_predict_batch")
    on_train_begin = _whole("on_train_begin")
    on_train_end = _whole("on_train_end")
    on_test_begin = _whole("on_test_begin")
    on_test_end = _whole("on_test_end")
    on_predict_begin = _whole("on_predict_begin")
    on_predict_end = _whole("on_predict_end")
