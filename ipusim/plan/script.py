"""``ipusim run --plan SCRIPT``: run an IPU TensorFlow 2 script until its ``fit`` (the first, or
the one ``--plan-fit`` names) and plan the model it was about to train (the script stops there;
that fit trains nothing). With ``--inference`` the script stops at its first ``fit`` or at its
first ``predict`` (``evaluate`` with ``--inference evaluate``), whichever comes first, so a script
that only predicts is planned too, for the samples that call predicts.

The model is named by a *script reference*, ``script:PATH ARG...`` (``script@N:PATH ARG...`` for
the Nth fit, ``script@predict:`` / ``script@evaluateN:`` for the first predict / Nth evaluate),
which ``workloads/keras_model.py --model`` resolves in any process by running the script again
up to that call: so ``best.toml`` and ``sweep/plans.toml`` re-run in another process.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ipusim.errors import ConfigurationError

__all__ = [
    "Captured",
    "ScriptCall",
    "capture",
    "parse_reference",
    "script_model",
    "script_reference",
]

_REFERENCE = re.compile(r"script(?:@(predict|evaluate)?(\d+)?)?:(.+)", re.DOTALL)


class ScriptCall(NamedTuple):
    """What a script reference names: the script, its arguments and its ``number``-th call of
    ``call`` (``fit``, ``predict`` or ``evaluate``)."""

    path: str
    args: list[str]
    number: int
    call: str = "fit"


class Captured(NamedTuple):
    """The call a script was stopped at.

    Attributes:
        model: the model of the call.
        call: ``fit``, ``predict`` or ``evaluate``.
        samples: the samples the call runs over all replicas (inference; None for a fit).
    """

    model: Any
    call: str = "fit"
    samples: int | None = None


class _Captured(BaseException):
    """Stops the script at the call to plan (a BaseException, so no ``except Exception`` of the
    script catches it)."""

    def __init__(self, captured: Captured) -> None:
        super().__init__("ipusim run --plan: the model to plan was captured")
        self.captured = captured


def script_reference(
    script: str | os.PathLike[str], args: Sequence[str] = (), fit: int = 1, call: str = "fit"
) -> str:
    """The ``--model`` reference of the model of call number ``fit`` of ``call`` (``fit``,
    ``predict`` or ``evaluate``) of ``script args...`` (the script's absolute path, so another
    working folder finds it)."""
    words = shlex.join([str(Path(script).resolve()), *args])
    kind = "" if call == "fit" else call
    number = "" if fit == 1 else str(fit)
    return f"script@{kind}{number}:{words}" if kind or number else f"script:{words}"


def parse_reference(reference: str) -> ScriptCall | None:
    """The :class:`ScriptCall` a script reference names; None for any other reference
    (``module:function``, whose function part is an identifier, or a name).

    Raises:
        ConfigurationError: a script reference naming no script, or with unbalanced quotes.
    """
    match = _REFERENCE.fullmatch(reference)
    if match is None or match.group(3).isidentifier():
        return None
    try:
        words = shlex.split(match.group(3))
    except ValueError as exc:
        words, why = [], f" ({exc})"
    else:
        why = ""
    if not words:
        raise ConfigurationError(
            f"a script reference is script:PATH ARG... (script@N:... for the Nth fit, "
            f"script@predict:... for its first predict), quoted as a shell would; got "
            f"{reference!r}{why}"
        )
    return ScriptCall(words[0], words[1:], int(match.group(2) or 1), match.group(1) or "fit")


def script_model(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    system: str | None = None,
    fit: int = 1,
    call: str = "fit",
) -> Any:
    """The Keras model of ``script``'s ``fit``-th call of ``call`` (``fit`` by default: the
    model it trains; ``predict`` or ``evaluate``), counted over all its models; see
    :func:`capture`."""
    return capture(script, args, system, fit, (call,)).model


def capture(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    system: str | None = None,
    number: int = 1,
    calls: Sequence[str] = ("fit",),
) -> Captured:
    """Run ``script`` until the ``number``-th call of one of ``calls`` and capture it. The model
    is built with fresh layer-name counters (so auto-named layers are named alike in every
    process that captures it); the calls before it run as the script runs them; nothing after
    it runs. The IPU configuration and settings the script set are reset afterwards.

    Raises:
        ConfigurationError: ``number`` is not a positive int; the script ended before that
            call; or a fit's model is not compiled with a loss.
    """
    from ipusim.config import reset_ipu_configuration
    from ipusim.config._env import settings_restored
    from ipusim.plan.search import _with_fresh_names

    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ConfigurationError(
            f"the fit to plan must be a positive int (1: the first); got {number!r}"
        )
    got: Captured | None
    try:
        with settings_restored():
            seen, got = _with_fresh_names(lambda: _run_to_call(script, args, system, number, calls))
    finally:
        reset_ipu_configuration()
    if got is None:
        raise _ended(script, seen, number, calls)
    if got.call == "fit" and getattr(got.model, "loss", None) is None:
        raise ConfigurationError(
            f"ipusim run --plan: fit number {number} of {script} trains a model that is not "
            "compiled with a loss (IPU TensorFlow's fit needs one): call model.compile("
            "optimizer=..., loss=...) before that fit"
        )
    return got


def _ended(
    script: str | os.PathLike[str], seen: dict[str, int], number: int, calls: Sequence[str]
) -> ConfigurationError:
    """The error for a script that ended before the ``number``-th call of ``calls``."""
    names = " or ".join(f"{c}()" for c in calls)
    if not any(seen.values()):
        return ConfigurationError(
            f"ipusim run --plan: {script} ended without calling {names} on a Keras model built "
            "in an IPUStrategy scope, so there is no model to plan; plan a model function with "
            "`ipusim plan --model module:function` instead"
        )
    made = ", ".join(f"{seen[c]} {c}() call(s)" for c in calls)
    return ConfigurationError(
        f"ipusim run --plan: {script} ended after {made}, so there is no {names} number "
        f"{number} to plan; give --plan-fit between 1 and {max(seen.values())}"
    )


def _run_to_call(
    script: str | os.PathLike[str],
    args: Sequence[str],
    system: str | None,
    number: int,
    calls: Sequence[str],
) -> tuple[dict[str, int], Captured | None]:
    """Run ``script`` until the ``number``-th call of one of ``calls``; (calls seen by kind,
    that call or None)."""
    from ipusim.compat.runner import run_script
    from ipusim.keras.extensions.run import FIT_OBSERVERS, INFERENCE_OBSERVERS

    seen = dict.fromkeys(calls, 0)

    def observe(model: Any, kind: str, samples: int | None) -> None:
        if kind in seen:
            seen[kind] += 1
            if seen[kind] == number:
                raise _Captured(Captured(model, kind, samples))

    def on_fit(model: Any, call: Any) -> None:
        observe(model, "fit", None)

    def on_inference(model: Any, kind: str, plan: Any) -> None:
        replicas = model._replication_factor()
        observe(model, kind, plan.steps_per_epoch * plan.batch_size * replicas)

    FIT_OBSERVERS.append(on_fit)
    INFERENCE_OBSERVERS.append(on_inference)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            run_script(script, args, output=scratch, system=system, quiet=True, reports=False)
    except _Captured as stop:
        return seen, stop.captured
    finally:
        FIT_OBSERVERS.remove(on_fit)
        INFERENCE_OBSERVERS.remove(on_inference)
    return seen, None
