"""``ipusim run --plan SCRIPT``: run an IPU TensorFlow 2 script until its ``fit`` (the first, or
the one ``--plan-fit`` names) and plan the model it was about to train (the script stops there;
that fit trains nothing).

The model is named by a *script reference*, ``script:PATH ARG...`` (``script@N:PATH ARG...`` for
the Nth fit), which ``workloads/keras_model.py --model`` resolves in any process by running the
script again up to that fit: so ``best.toml`` and ``sweep/plans.toml`` re-run in another process.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ipusim.errors import ConfigurationError

__all__ = ["parse_reference", "script_model", "script_reference"]

_REFERENCE = re.compile(r"script(?:@(\d+))?:(.+)", re.DOTALL)


class _Captured(BaseException):
    """Stops the script at the fit to plan (a BaseException, so no ``except Exception`` of the
    script catches it)."""

    def __init__(self, model: Any) -> None:
        super().__init__("ipusim run --plan: the model to plan was captured")
        self.model = model


def script_reference(script: str | os.PathLike[str], args: Sequence[str] = (), fit: int = 1) -> str:
    """The ``--model`` reference of the model fit number ``fit`` of ``script args...`` trains
    (the script's absolute path, so another working folder finds it)."""
    words = shlex.join([str(Path(script).resolve()), *args])
    return f"script:{words}" if fit == 1 else f"script@{fit}:{words}"


def parse_reference(reference: str) -> tuple[str, list[str], int] | None:
    """The script, its arguments and the fit number of a script reference; None for any other
    reference (``module:function``, whose function part is an identifier, or a name).

    Raises:
        ConfigurationError: a script reference naming no script, or with unbalanced quotes.
    """
    match = _REFERENCE.fullmatch(reference)
    if match is None or match.group(2).isidentifier():
        return None
    try:
        words = shlex.split(match.group(2))
    except ValueError as exc:
        words, why = [], f" ({exc})"
    else:
        why = ""
    if not words:
        raise ConfigurationError(
            f"a script reference is script:PATH ARG... (script@N:... for the Nth fit), quoted "
            f"as a shell would; got {reference!r}{why}"
        )
    return words[0], words[1:], int(match.group(1) or 1)


def script_model(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    system: str | None = None,
    fit: int = 1,
) -> Any:
    """The Keras model ``script`` trains at its ``fit``-th ``fit`` call (counted over all its
    models), captured at that call, built with fresh layer-name counters (so auto-named layers
    are named alike in every process that captures it). The fits before it run as the script
    runs them; nothing after it runs. The IPU configuration and settings the script set are
    reset afterwards.

    Raises:
        ConfigurationError: ``fit`` is not a positive int; the script ended before its
            ``fit``-th fit; or that fit's model is not compiled with a loss.
    """
    from ipusim.config import reset_ipu_configuration
    from ipusim.config._env import settings_restored
    from ipusim.plan.search import _with_fresh_names

    if isinstance(fit, bool) or not isinstance(fit, int) or fit < 1:
        raise ConfigurationError(
            f"the fit to plan must be a positive int (1: the first); got {fit!r}"
        )
    try:
        with settings_restored():
            fits, model = _with_fresh_names(lambda: _run_to_fit(script, args, system, fit))
    finally:
        reset_ipu_configuration()
    if model is None and fits == 0:
        raise ConfigurationError(
            f"ipusim run --plan: {script} ended without calling fit() on a Keras model built in "
            "an IPUStrategy scope, so there is no model to plan; plan a model function with "
            "`ipusim plan --model module:function` instead"
        )
    if model is None:
        raise ConfigurationError(
            f"ipusim run --plan: {script} ended after {fits} fit() call(s), so there is no fit "
            f"number {fit} to plan; give --plan-fit between 1 and {fits}"
        )
    if getattr(model, "loss", None) is None:
        raise ConfigurationError(
            f"ipusim run --plan: fit number {fit} of {script} trains a model that is not compiled "
            "with a loss (IPU TensorFlow's fit needs one): call model.compile(optimizer=..., "
            "loss=...) before that fit"
        )
    return model


def _run_to_fit(
    script: str | os.PathLike[str], args: Sequence[str], system: str | None, fit: int
) -> tuple[int, Any]:
    """Run ``script`` until its ``fit``-th fit; (fits seen, the model of that fit or None)."""
    from ipusim.compat.runner import run_script
    from ipusim.keras.extensions.run import FIT_OBSERVERS

    seen = [0]

    def observe(model: Any, call: Any) -> None:
        seen[0] += 1
        if seen[0] == fit:
            raise _Captured(model)

    FIT_OBSERVERS.append(observe)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            run_script(script, args, output=scratch, system=system, quiet=True, reports=False)
    except _Captured as captured:
        return seen[0], captured.model
    finally:
        FIT_OBSERVERS.remove(observe)
    return seen[0], None
