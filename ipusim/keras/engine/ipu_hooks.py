"""The seam between the Keras loop and the IPU extension: template hooks, not class surgery.

``Model.fit`` / ``evaluate`` / ``predict`` call :meth:`IPUExtension.begin_run` at their start
when the model has an extension (models created inside an ``IPUStrategy`` scope, see
:mod:`ipusim.keras.extensions`), run the Keras loop with the :class:`LoopSettings` the run
chose, and hand the result to :meth:`IPURun.finish`. Tracing calls :meth:`IPUExtension.trace_scope`
and :meth:`IPUExtension.traced`; a Sequential model's layer changes call
:meth:`IPUExtension.layers_changed`. The model's class never changes and no attribute is set and
restored around a call: everything a run decides lives in its :class:`IPURun`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

#: The three runs a Keras model has.
RunKind = Literal["fit", "evaluate", "predict"]


def no_step() -> None:
    """No simulated clock to move."""


@dataclass(frozen=True)
class LoopSettings:
    """How the Keras loop of one ``fit`` / ``evaluate`` / ``predict`` runs its steps.

    Attributes:
        steps_per_execution: steps run between two batch-end callbacks (fit).
        replicas: batches each training step takes, one per data-parallel replica.
        norm_group: consecutive replicas whose batch-norm statistics are shared.
        on_step: called after every step (evaluate / predict: every batch); the IPU extension
            moves the simulated clock here.
    """

    steps_per_execution: int = 1
    replicas: int = 1
    norm_group: int = 1
    on_step: Callable[[], None] = no_step


@dataclass(frozen=True)
class RunCall:
    """The arguments of a ``fit`` / ``evaluate`` / ``predict`` call the extension reads.

    Attributes:
        x, y, sample_weight: the data as given.
        batch_size: the call's ``batch_size``.
        steps: ``steps_per_epoch`` (fit) or ``steps``.
        verbose: the call's ``verbose`` as given (``"auto"`` included).
        epochs, initial_epoch: fit's (1 and 0 for evaluate / predict).
    """

    x: Any
    y: Any
    sample_weight: Any
    batch_size: int | None
    steps: int | None
    verbose: Any
    epochs: int = 1
    initial_epoch: int = 0


class IPURun(Protocol):
    """One fit / evaluate / predict of a model with the IPU extension."""

    #: The data the Keras loop runs on (read as the IPU reads it).
    x: Any
    y: Any
    #: How the loop runs its steps.
    loop: LoopSettings
    #: False in timing-only mode: the Keras loop does not run, :meth:`finish` gets None.
    numerics: bool

    def finish(self, result: Any) -> Any:
        """What the call returns, given what the Keras loop returned (simulation attached)."""
        ...


class IPUExtension(Protocol):
    """The hooks an IPU extension fills in (each takes the model it extends)."""

    def begin_run(self, model: Any, kind: RunKind, call: RunCall) -> IPURun:
        """Check the call as the IPU would, lower its step, and plan the loop."""
        ...

    def trace_scope(self, model: Any) -> AbstractContextManager[None]:
        """Entered around every trace of the model."""
        ...

    def traced(self, model: Any, trace: Any, building: bool) -> None:
        """A trace of the model finished (``building``: it was ``build()``'s)."""
        ...

    def layers_changed(self, model: Any) -> None:
        """A layer was added to or removed from a Sequential model."""
        ...


__all__ = ["IPUExtension", "IPURun", "LoopSettings", "RunCall", "RunKind", "no_step"]
