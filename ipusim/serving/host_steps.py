"""The host steps of a serving export: ``preprocessing_step`` and ``postprocessing_step``.

IPU TensorFlow's exports (``export_single_step``, ``export_pipeline``, ``export_keras`` and
``model.export_for_ipu_serving``) take a preprocessing step run on the CPU before the IPU program
and a postprocessing step run on the CPU after it: ``preprocessing_step`` (CPU) ->
``predict_step`` (IPU) -> ``postprocessing_step`` (CPU). Their inputs may be strings
(``tf.string``), which never go to the IPU. ipusim runs them on the host, eagerly, as Python
functions (a ``tf.function`` runs its Python function): :class:`HostStepsModel` wraps the loaded
export. The steps' signatures and names are recorded in the export's manifest (``host_steps``);
the steps themselves are Python code, which an ipusim export does not store (it holds no code
and no pickle), so ``ipusim.serving.load`` of the folder serves the IPU program alone. The
simulated timing is the IPU program's; the host steps' time is not simulated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError
from ipusim.keras.engine.nest import flatten

if TYPE_CHECKING:
    from ipusim.serving.served import ServedModel

__all__ = ["HostStep", "HostSteps", "HostStepsModel", "host_steps"]


@dataclass(frozen=True)
class HostStep:
    """One host step: the function and the specs of its inputs.

    Attributes:
        name: the function's name.
        function: the Python function run on the host.
        specs: its input specs (``shape``, ``dtype`` — "string" for ``tf.string`` — ``name``).
    """

    name: str
    function: Callable[..., Any]
    specs: tuple[Any, ...]

    def manifest(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inputs": [
                {"name": s.name or f"input_{i}", "shape": list(s.shape), "dtype": str(s.dtype)}
                for i, s in enumerate(self.specs)
            ],
        }

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.specs):
            raise InputDataError(
                f"{self.name}: the host step takes {len(self.specs)} input(s) (its signature), "
                f"received {len(args)}"
            )
        return self.function(*[_host_value(a, s, self.name) for a, s in zip(args, self.specs)])


def _host_value(value: Any, spec: Any, step: str) -> Any:
    """``value`` as the tensor ``spec`` describes: a string tensor or an eager array."""
    from ipusim.compat.runtime.strings import as_string_tensor
    from ipusim.compat.runtime.tensor import to_eager

    if spec.dtype == "string":
        array = as_string_tensor(value)
    else:
        array = to_eager(np.asarray(value, dtype=spec.dtype))
    known = tuple(spec.shape)
    if len(known) != array.ndim or any(d not in (None, n) for d, n in zip(known, array.shape)):
        raise InputDataError(
            f"{step}: input {spec.name or '?'!r} must have shape {tuple(spec.shape)}, received "
            f"{array.shape}"
        )
    return array


def _step(what: str, kind: str, function: Any, signature: Any) -> HostStep | None:
    if function is None:
        if signature is not None:
            raise ConfigurationError(f"{what}: {kind}_step_signature given without {kind}_step")
        return None
    if not callable(function):
        raise ConfigurationError(f"{what}: {kind}_step must be a function, received {function!r}")
    if signature is None:
        signature = getattr(function, "_options", {}).get("input_signature")
    if signature is None:
        raise ConfigurationError(
            f"{what}: {kind}_step {getattr(function, '__name__', '?')!r} has no input signature; "
            f"pass {kind}_step_signature=(tf.TensorSpec(shape, dtype), ...) or decorate it with "
            "@tf.function(input_signature=...)"
        )
    specs = tuple(flatten(signature))
    if not specs or not all(hasattr(s, "shape") and hasattr(s, "dtype") for s in specs):
        raise ConfigurationError(
            f"{what}: {kind}_step_signature must be a non-empty sequence of tf.TensorSpec, "
            f"received {signature!r}"
        )
    python = getattr(function, "python_function", function)
    return HostStep(getattr(python, "__name__", kind), python, specs)


@dataclass(frozen=True)
class HostSteps:
    """The preprocessing and postprocessing steps of one export (either may be None)."""

    preprocessing: HostStep | None
    postprocessing: HostStep | None

    def manifest(self) -> dict[str, Any]:
        """The manifest entry recording the steps (their names and signatures)."""
        return {
            "host_steps": {
                "preprocessing": self.preprocessing.manifest() if self.preprocessing else None,
                "postprocessing": self.postprocessing.manifest() if self.postprocessing else None,
                "stored": False,
            }
        }

    def attach(self, served: ServedModel) -> HostStepsModel:
        """``served`` with the steps around it (a :class:`HostStepsModel`)."""
        return HostStepsModel(served, self)


def host_steps(
    what: str,
    preprocessing_step: Any = None,
    preprocessing_step_signature: Any = None,
    postprocessing_step: Any = None,
    postprocessing_step_signature: Any = None,
) -> HostSteps | None:
    """The export's host steps, checked as IPU TensorFlow checks them (None when there are none).

    Raises:
        ConfigurationError: a step is not callable, has no signature (neither given nor its
            ``tf.function``'s ``input_signature``), or a signature comes without its step.
    """
    pre = _step(what, "preprocessing", preprocessing_step, preprocessing_step_signature)
    post = _step(what, "postprocessing", postprocessing_step, postprocessing_step_signature)
    return HostSteps(pre, post) if pre is not None or post is not None else None


class HostStepsModel:
    """An export's runtime function with its host steps: ``pre`` (host) -> the IPU program ->
    ``post`` (host). Other attributes (``timing``, ``trace``, ``input_specs``...) are the
    loaded IPU program's (:class:`ipusim.serving.ServedModel`)."""

    def __init__(self, served: ServedModel, steps: HostSteps) -> None:
        self.served = served
        self.host_steps = steps

    def __call__(self, *args: Any) -> Any:
        from ipusim.compat.runtime.tensor import to_eager

        pre, post = self.host_steps.preprocessing, self.host_steps.postprocessing
        if pre is not None:
            args = tuple(np.asarray(v) for v in flatten(pre(*args)))
        outputs = self.served(*args)
        if post is not None:
            outputs = post(*(outputs if isinstance(outputs, list | tuple) else [outputs]))
        return to_eager(outputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.served, name)

    def __repr__(self) -> str:
        return f"<HostStepsModel around {self.served!r}>"
