"""``tf.GradientTape`` over traced code: gradients are graph nodes built by reverse-mode autodiff.

Inside a device function every op is already recorded in the function's graph (Keras layers
called on traced tensors add their nodes too), so the tape only needs to know the target and the
sources: ``tape.gradient(loss, model.trainable_variables)`` adds the backward pass
(:func:`ipusim.graph.autodiff.gradients`, phase ``"bwd"``) and returns one gradient Symbol per
source (None where the target does not depend on it). A non-scalar target is summed first, as
TensorFlow does. Tapes outside a traced function cannot see eager numpy computations, so they
report that the step belongs in a ``tf.function``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from ipusim.compat.runtime import context
from ipusim.errors import IncompatibleStateError, InvalidTypeError
from ipusim.graph.autodiff import gradients as graph_gradients
from ipusim.graph.graph import Symbol, apply, to_symbol
from ipusim.graph.ops.math import multiply
from ipusim.graph.ops.reduce import reduce_sum
from ipusim.keras.engine.nest import flatten, pack_sequence_as

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients(Enum):
    """What a source the target does not depend on gets: None, or zeros."""

    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Records the traced computation so gradients can be taken (``tf.GradientTape``).

    Args:
        persistent: allow several ``gradient`` calls.
        watch_accessed_variables: accepted for compatibility (every variable read is watched).
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._used = False
        self._watched: list[Any] = []

    def __enter__(self) -> GradientTape:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def watch(self, tensor: Any) -> None:
        """Watch a tensor or variable (traced tensors and variables are always watched)."""
        self._watched.extend(flatten(tensor))

    @contextmanager
    def stop_recording(self) -> Iterator[None]:
        yield

    def reset(self) -> None:
        self._used = False
        self._watched = []

    def watched_variables(self) -> list[Any]:
        ctx = context.current()
        return list(ctx.graph.variables) if ctx is not None else []

    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: Any = UnconnectedGradients.NONE,
    ) -> Any:
        """Gradients of ``target`` with respect to ``sources`` (same structure as ``sources``).

        Raises:
            RuntimeError: a second call on a non-persistent tape, or a target that was not
                computed in a traced function.
        """
        if self._used and not self._persistent:
            raise IncompatibleStateError(
                "A non-persistent GradientTape can only be used to compute one set of "
                "gradients; create it with GradientTape(persistent=True) to call gradient() "
                "several times."
            )
        targets = flatten(target)
        if not targets or not all(isinstance(t, Symbol) for t in targets):
            raise IncompatibleStateError(
                "GradientTape.gradient: the target was not computed in a traced function. "
                "ipusim differentiates traced code: put the step in a @tf.function (run it with "
                "strategy.run) so the tape can see the computation."
            )
        graph = targets[0].graph
        self._used = True
        seeds = flatten(output_gradients) if output_gradients is not None else []
        # no output gradient (None or empty, as TensorFlow's tape): every target is seeded by ones
        seeds = seeds or [None] * len(targets)
        total: Symbol | None = None
        for t, seed in zip(targets, seeds):
            if seed is not None:
                t = reduce_sum(multiply(t, to_symbol(seed, graph, t.dtype)))
            elif t.shape != ():
                t = reduce_sum(t)
            total = t if total is None else apply("add", total, t)
        assert total is not None  # targets and seeds are not empty
        flat_sources = flatten(sources)
        symbols = []
        for source in flat_sources:
            if getattr(source, "_is_ipusim_variable", False):
                symbols.append(graph.read_variable(source))
            elif isinstance(source, Symbol):
                symbols.append(source)
            else:
                raise InvalidTypeError(
                    f"GradientTape.gradient: sources must be variables or traced tensors, "
                    f"received {type(source).__name__}"
                )
        grads = graph_gradients(total, symbols)
        mode = (
            unconnected_gradients
            if isinstance(unconnected_gradients, UnconnectedGradients)
            else UnconnectedGradients(str(unconnected_gradients).lower())
        )
        if mode is UnconnectedGradients.ZERO:
            grads = [
                g if g is not None else multiply(s, to_symbol(0.0, graph, s.dtype))
                for g, s in zip(grads, symbols)
            ]
        if isinstance(sources, list | tuple | dict):
            return pack_sequence_as(sources, grads)
        return grads[0]
