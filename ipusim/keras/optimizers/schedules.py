"""Learning-rate schedules, as ``tf.keras.optimizers.schedules`` in TensorFlow 2.4–2.6.

A schedule is called with the optimizer's step (``optimizer.iterations`` before the update, i.e. 0
for the first update) and returns the learning rate for that update. Arithmetic is plain Python
float64 on scalars; no kernel is involved.
"""

from __future__ import annotations

import bisect
import difflib
import math
from collections.abc import Sequence
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.keras.keyword_init import fields


class LearningRateSchedule:
    """Base class: subclasses implement ``__call__(step) -> float`` and ``get_config()`` (or
    list in ``_config_keys`` the attributes ``get_config`` returns)."""

    #: Constructor arguments ``get_config`` returns, in Keras' order, each an attribute.
    _config_keys: tuple[str, ...] = ()

    def __call__(self, step: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step)")

    def get_config(self) -> dict[str, Any]:
        if not self._config_keys:
            raise NotImplementedError(f"{type(self).__name__} must implement get_config()")
        return {key: getattr(self, key) for key in self._config_keys}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningRateSchedule:
        """Instantiate a schedule from the dict :meth:`get_config` returned."""
        return cls(**config)


def _check_positive(owner: str, name: str, value: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ConfigurationError(f"{owner}: {name} must be a positive number, received {value!r}")
    return value


class _RateDecay(LearningRateSchedule):
    """The arguments and the (staircase) progress ``step / decay_steps`` that
    :class:`ExponentialDecay` and :class:`InverseTimeDecay` share."""

    _config_keys = ("initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name")
    #: The class named in argument errors.
    _owner = ""

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str | None = None,
    ) -> None:
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _check_positive(self._owner, "decay_steps", decay_steps)
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def _progress(self, step: int) -> float:
        p = float(step) / self.decay_steps
        return math.floor(p) if self.staircase else p


class ExponentialDecay(_RateDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    With ``staircase=True`` the exponent is ``floor(step / decay_steps)``, so the rate drops at
    whole multiples of ``decay_steps``.
    """

    _owner = "ExponentialDecay"

    def __call__(self, step: int) -> float:
        # float ** float is typed Any (a negative base gives a complex): the rate is a float.
        factor: float = float(self.decay_rate) ** self._progress(step)
        return float(self.initial_learning_rate) * factor


class PiecewiseConstantDecay(LearningRateSchedule):
    """Constant rates between step boundaries.

    ``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` after the last boundary.
    """

    _config_keys = ("boundaries", "values", "name")

    def __init__(
        self, boundaries: Sequence[float], values: Sequence[float], name: str | None = None
    ) -> None:
        if len(boundaries) != len(values) - 1:
            raise ConfigurationError(
                "PiecewiseConstantDecay: the length of boundaries should be 1 less than the "
                f"length of values; received {len(boundaries)} boundaries and {len(values)} values"
            )
        if any(b > a for a, b in zip(boundaries[1:], boundaries[:-1], strict=False)):
            raise ConfigurationError(
                f"PiecewiseConstantDecay: boundaries must be increasing, received {list(boundaries)}"
            )
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step: int) -> float:
        return float(self.values[bisect.bisect_left(self.boundaries, step)])


class InverseTimeDecay(_RateDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored if staircase)."""

    _owner = "InverseTimeDecay"

    def __call__(self, step: int) -> float:
        p = self._progress(step)
        return float(self.initial_learning_rate) / (1.0 + float(self.decay_rate) * p)


class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps``.

    ``(initial - end) * (1 - step / decay_steps) ** power + end`` with the step capped at
    ``decay_steps``; with ``cycle=True`` the decay period is extended to the next multiple of
    ``decay_steps`` instead.
    """

    _config_keys = (
        "initial_learning_rate",
        "decay_steps",
        "end_learning_rate",
        "power",
        "cycle",
        "name",
    )

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        name: str | None = None,
    ) -> None:
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _check_positive("PolynomialDecay", "decay_steps", decay_steps)
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step: int) -> float:
        step_f = float(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            multiplier = 1.0 if step_f == 0 else math.ceil(step_f / decay_steps)
            decay_steps *= multiplier
        else:
            step_f = min(step_f, decay_steps)
        p = step_f / decay_steps
        initial, end = float(self.initial_learning_rate), float(self.end_learning_rate)
        # p <= 1, so the base is not negative and the power a float (typed Any).
        decayed: float = (1.0 - p) ** float(self.power)
        return (initial - end) * decayed + end


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` (or from ``warmup_target`` after a warmup).

    Without warmup: ``initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)``. With ``warmup_target`` (tf-keras 2.12+): a linear ramp from
    ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``, then the cosine decay
    from ``warmup_target`` over the next ``decay_steps``.
    """

    _config_keys = (
        "initial_learning_rate",
        "decay_steps",
        "alpha",
        "name",
        "warmup_target",
        "warmup_steps",
    )

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        alpha: float = 0.0,
        name: str | None = None,
        warmup_target: float | None = None,
        warmup_steps: int = 0,
    ) -> None:
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _check_positive("CosineDecay", "decay_steps", decay_steps)
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step: float, start: float) -> float:
        cosine = 0.5 * (1.0 + math.cos(math.pi * step / float(self.decay_steps)))
        alpha = float(self.alpha)
        return start * ((1.0 - alpha) * cosine + alpha)

    def __call__(self, step: int) -> float:
        initial = float(self.initial_learning_rate)
        if self.warmup_target is None:
            return self._decay(min(float(step), float(self.decay_steps)), initial)
        warmup = float(self.warmup_steps)
        step_ = min(float(step), float(self.decay_steps) + warmup)
        target = float(self.warmup_target)
        if step_ < warmup:
            return (target - initial) * (step_ / warmup) + initial
        return self._decay(step_ - warmup, target)


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter 2017).

    The first period lasts ``first_decay_steps``; period ``i`` lasts ``t_mul**i`` times as long
    and starts from ``m_mul**i`` times the initial rate. Within a period the rate follows
    :class:`CosineDecay` with the same ``alpha`` (the floor is ``alpha * initial``).
    """

    def __init__(
        self,
        initial_learning_rate: float,
        first_decay_steps: int,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        alpha: float = 0.0,
        name: str | None = None,
    ) -> None:
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = _check_positive(
            "CosineDecayRestarts", "first_decay_steps", first_decay_steps
        )
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step: int) -> float:
        fraction = float(step) / float(self.first_decay_steps)
        t_mul = float(self._t_mul)
        if t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            # Periods grow geometrically: restart i starts at (1 - t_mul**i) / (1 - t_mul).
            restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            start = (1.0 - t_mul**restart) / (1.0 - t_mul)
            fraction = (fraction - start) / t_mul**restart
        cosine = 0.5 * float(self._m_mul) ** restart * (1.0 + math.cos(math.pi * fraction))
        alpha = float(self.alpha)
        return float(self.initial_learning_rate) * ((1.0 - alpha) * cosine + alpha)

    def get_config(self) -> dict[str, Any]:
        return {
            **fields(self, "initial_learning_rate first_decay_steps"),
            "t_mul": self._t_mul,
            "m_mul": self._m_mul,
            **fields(self, "alpha name"),
        }


_SCHEDULES: dict[str, type[LearningRateSchedule]] = {
    cls.__name__: cls
    for cls in (
        ExponentialDecay,
        PiecewiseConstantDecay,
        InverseTimeDecay,
        PolynomialDecay,
        CosineDecay,
        CosineDecayRestarts,
    )
}


def serialize(schedule: LearningRateSchedule) -> dict[str, Any]:
    """``{"class_name": ..., "config": ...}`` for a schedule."""
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(
    config: dict[str, Any], custom_objects: dict[str, Any] | None = None
) -> LearningRateSchedule:
    """The schedule described by a :func:`serialize` dict.

    Raises:
        ValueError: for an unknown ``class_name`` (with the known names and a close match).
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ConfigurationError(
            "schedules.deserialize: expected a dict with 'class_name' and 'config', received "
            f"{config!r}"
        )
    known = dict(_SCHEDULES)
    known.update(custom_objects or {})
    name = config["class_name"]
    if name not in known:
        close = difflib.get_close_matches(str(name), list(known), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"Unknown learning rate schedule: {name!r}. Known schedules: {sorted(known)}.{hint}"
        )
    return known[name].from_config(dict(config.get("config", {})))
