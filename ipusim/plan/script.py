"""``ipusim run --plan SCRIPT``: run an IPU TensorFlow 2 script until its first ``fit`` and plan
the model it was about to train (the script stops there; nothing is trained)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

from ipusim.errors import ConfigurationError

__all__ = ["script_model"]


class _Captured(BaseException):
    """Stops the script at its first ``fit`` (a BaseException, so no ``except Exception`` of the
    script catches it)."""

    def __init__(self, model: Any) -> None:
        super().__init__("ipusim run --plan: the model to plan was captured")
        self.model = model


def script_model(
    script: str | os.PathLike[str], args: Sequence[str] = (), system: str | None = None
) -> Any:
    """The Keras model ``script`` trains first, captured at its ``fit`` call.

    Raises:
        ConfigurationError: the script ended without calling ``fit`` on a model built in an
            ``IPUStrategy`` scope.
    """
    from ipusim.compat.runner import run_script
    from ipusim.keras.extensions.run import FIT_OBSERVERS

    def observe(model: Any, call: Any) -> None:
        raise _Captured(model)

    FIT_OBSERVERS.append(observe)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            run_script(script, args, output=scratch, system=system, quiet=True, reports=False)
    except _Captured as captured:
        return captured.model
    finally:
        FIT_OBSERVERS.remove(observe)
    raise ConfigurationError(
        f"ipusim run --plan: {script} ended without calling fit() on a Keras model built in an "
        "IPUStrategy scope, so there is no model to plan; plan a model function with "
        "`ipusim plan --model module:function` instead"
    )
