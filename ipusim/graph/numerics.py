"""The floating-point model a run computes with: half precision, partials, rounding, traps.

:class:`Numerics` gathers what decides the numbers of an execution besides the graph itself:

* ``emulate_half``: float32 tensors are computed as half precision (``IPUConfig.ipusim.precision``
  ``"fp16.16"`` or ``"fp16.32"``, the precision the timing side already charges for). Tensors
  whose dtype is float16 are always half, whatever the precision.
* ``matmul_partials`` / ``conv_partials``: the type of the partial sums of half-precision matrix
  products and convolutions, ``"half"`` or ``"float"``: PopLibs' ``partialsType`` option from
  ``IPUConfig.matmuls.poplar_options`` / ``convolutions.poplar_options`` when given, else half for
  fp16.16 and float otherwise (PopLibs' own default is float).
* stochastic rounding (``floating_point_behaviour.esr``): ``ON`` rounds every half-precision result
  stochastically; ``REPLICA_IDENTICAL_ONLY`` only the weight update (the part of the step every
  replica computes identically).
* ``stable_norm_statistics`` (``norms.use_stable_statistics``): batch norm's statistics (and
  layer norm's on Keras' fused path) in two passes (the mean, then the mean of the squared
  deviations) instead of PopLibs' default single pass (the mean of squares less the squared
  mean, which cancels when a channel's mean is large against its spread).
* ``nanoo`` (overflow gives NaN instead of saturating) and the traps ``inv``, ``div0``, ``oflo``
  (the IPU stops with an exception); ``set_all`` turns all of them and ``esr`` on.

:func:`current_numerics` reads the active IPUConfig (defaults when none is configured: IPU
TensorFlow's defaults, every flag off). See ``docs/numerics.md`` for where each rounding happens.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ipusim.errors import ConfigurationError, IPUSimError

if TYPE_CHECKING:
    from ipusim.config import IPUConfig
    from ipusim.graph.execute import ExecContext
    from ipusim.kernels.amp import AmpProducts

#: Values of PopLibs' ``partialsType`` option that ipusim understands (S: PopLibs matmul and
#: convolution options).
PARTIALS_TYPES = ("half", "float")

_state = threading.local()
_SEED = {"seed": 0}


@dataclass(frozen=True)
class Numerics:
    """How the executor computes.

    Attributes:
        emulate_half: compute float32 tensors as half precision (precision fp16.16 / fp16.32).
        matmul_partials: partial-sum type of half-precision matrix products.
        conv_partials: partial-sum type of half-precision convolutions.
        stochastic_rounding: round every half-precision result stochastically.
        stochastic_rounding_updates: round half-precision weight updates stochastically.
        nan_on_overflow: a half-precision overflow gives NaN instead of +-65504.
        trap_invalid: stop on an invalid operation (a NaN made from non-NaN operands).
        trap_div0: stop on a division by zero.
        trap_overflow: stop on an overflow.
        seed: seed of the stochastic-rounding streams.
        stable_norm_statistics: batch-norm statistics (and layer norm's on Keras' fused path)
            in two passes (``norms.use_stable_statistics``); False: one pass, PopLibs' default.
    """

    emulate_half: bool = False
    matmul_partials: str = "float"
    conv_partials: str = "float"
    stochastic_rounding: bool = False
    stochastic_rounding_updates: bool = False
    nan_on_overflow: bool = False
    trap_invalid: bool = False
    trap_div0: bool = False
    trap_overflow: bool = False
    seed: int = 0
    stable_norm_statistics: bool = False

    @property
    def traps(self) -> bool:
        """Whether any floating-point exception stops the run."""
        return self.trap_invalid or self.trap_div0 or self.trap_overflow

    @property
    def plain(self) -> bool:
        """True when float32 arithmetic needs no emulation and nothing traps."""
        return not self.emulate_half and not self.traps

    def partials_for(self, kind: str) -> str:
        """Partials type of a half-precision product of ``kind`` ``"matmul"`` or ``"conv"``."""
        return self.conv_partials if kind == "conv" else self.matmul_partials


DEFAULT = Numerics()

_TRAP_FLAGS = {
    "inv": "an IEEE invalid operation",
    "div0": "a division by zero",
    "oflo": "an overflow",
}


class FloatingPointTrap(IPUSimError, FloatingPointError):
    """The IPU stopped on a floating-point exception that ``floating_point_behaviour`` traps.

    Attributes:
        flag: ``"inv"``, ``"div0"`` or ``"oflo"``.
        where: the node (and layer) that raised it.
    """

    def __init__(self, flag: str, where: str, detail: str) -> None:
        self.flag = flag
        self.where = where
        super().__init__(
            f"Floating-point exception ({_TRAP_FLAGS[flag]}) in {where}: {detail}. "
            f"IPUConfig.floating_point_behaviour.{flag} (or set_all) is True, so the IPU stops "
            f"here and this step changes nothing. Set floating_point_behaviour.{flag} = False to "
            "let the value through (an overflow then saturates to +-65504, or gives NaN with "
            "nanoo), or find the operation that leaves the representable range (loss scaling, "
            "a smaller learning rate or float32 for that layer)."
        )


def _partials(options: dict[str, object] | None, default: str, where: str) -> str:
    value = (options or {}).get("partialsType", default)
    text = str(value).lower()
    if text not in PARTIALS_TYPES:
        raise ConfigurationError(
            f"{where}['partialsType'] = {value!r} is not a partials type; use 'half' or 'float'"
        )
    return text


def from_config(config: IPUConfig | None, seed: int | None = None) -> Numerics:
    """The numerics an IPUConfig asks for (``None``: IPU TensorFlow's defaults).

    Raises:
        ValueError: a ``partialsType`` option other than ``"half"`` or ``"float"``.
    """
    seed = _SEED["seed"] if seed is None else int(seed)
    if config is None:
        return Numerics(seed=seed)
    precision = config.ipusim.precision
    fp = config.floating_point_behaviour
    esr = getattr(fp.esr, "name", str(fp.esr))
    every = bool(fp.set_all)
    partials_default = "half" if precision == "fp16.16" else "float"
    return Numerics(
        emulate_half=precision in ("fp16.16", "fp16.32"),
        matmul_partials=_partials(
            config.matmuls.poplar_options, partials_default, "matmuls.poplar_options"
        ),
        conv_partials=_partials(
            config.convolutions.poplar_options, partials_default, "convolutions.poplar_options"
        ),
        stochastic_rounding=every or esr == "ON",
        stochastic_rounding_updates=every or esr in ("ON", "REPLICA_IDENTICAL_ONLY"),
        nan_on_overflow=every or bool(fp.nanoo),
        trap_invalid=every or bool(fp.inv),
        trap_div0=every or bool(fp.div0),
        trap_overflow=every or bool(fp.oflo),
        seed=seed,
        stable_norm_statistics=bool(config.norms.use_stable_statistics),
    )


def current_numerics() -> Numerics:
    """The numerics of the active configuration (defaults when none is configured)."""
    from ipusim.config import active_config  # config sits beside graph/, imported late

    config = active_config()
    key = (id(config), _SEED["seed"])
    cached = getattr(_state, "cached", None)
    if cached is not None and cached[0] == key and cached[2] is config:
        hit: Numerics = cached[1]
        return hit
    numerics = from_config(config)
    _state.cached = (key, numerics, config)
    return numerics


def numerics_of(ctx: ExecContext | None) -> Numerics:
    """The numerics an execution context runs with: its own, else the active configuration's
    (the executor's plain float32 path leaves ``ctx.numerics`` unset)."""
    numerics = getattr(ctx, "numerics", None)
    return numerics if numerics is not None else current_numerics()


def set_rounding_seed(seed: int) -> None:
    """Restart the stochastic-rounding streams from ``seed`` (``keras.utils.set_random_seed``
    and ``ipu.utils.reset_ipu_seed`` call this, as the IPU's rounding unit shares the seed)."""
    _SEED["seed"] = int(seed)


def amp_products(ctx: ExecContext, kind: str) -> AmpProducts:
    """The :class:`~ipusim.kernels.amp.AmpProducts` of a half-precision product op's execution
    (``kind``: ``"matmul"`` or ``"conv"``), from its execution context."""
    from ipusim.kernels.amp import AmpProducts

    numerics = ctx.numerics or DEFAULT
    return AmpProducts(
        numerics.partials_for(kind),
        stochastic=numerics.stochastic_rounding,
        key=ctx.rounding_key,
        nan_on_overflow=numerics.nan_on_overflow,
    )


def computes_half(ctx: ExecContext | None) -> bool:
    """Whether the op being run has half-precision outputs (set by the executor)."""
    return bool(getattr(ctx, "half", False))
