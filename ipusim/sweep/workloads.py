"""Built-in sweep workloads (registered by name in :mod:`ipusim.sweep.registry`).

``mlp_timing``: the seed MLP of the IPU Keras guide (Flatten, Dense 256 relu, Dense 128 relu,
Dense 10) trained for one or two executions on synthetic MNIST-shaped data, returning
:func:`ipusim.sweep.figures.report_row` of the simulated run.
"""

from __future__ import annotations

import difflib
from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.sweep.figures import report_row

__all__ = [
    "AUTO",
    "MIN_STEPS_PER_EXECUTION",
    "MLP_TIMING_DEFAULTS",
    "check_mlp_timing_config",
    "mlp_timing",
    "warm_up_mlp_timing",
    "steps_per_execution_for",
]

#: Compute the numbers as well as the timing? The figures depend only on shapes, so sweeps run
#: timing-only (config.ipusim.numerics = False): no kernels run and no weights are allocated.
NUMERICS = False

#: ``steps_per_execution = "auto"`` (the default): derived from the accumulation count.
AUTO = "auto"
#: Micro-batch steps an execution has at least when ``steps_per_execution`` is derived (E: enough
#: that the host's per-execution overhead is amortised as in a real run's first executions).
MIN_STEPS_PER_EXECUTION = 10

#: The configuration keys of :func:`mlp_timing` and their defaults.
MLP_TIMING_DEFAULTS: dict[str, Any] = {
    "system": "",
    "host": "",
    "ipus": 1,
    "batch_size": 32,
    "steps_per_execution": AUTO,
    "gradient_accumulation": 1,
    "precision": "fp32",
    "executions": 1,
    "host_dataset_rate": 0.0,
    "numerics": NUMERICS,
}


def steps_per_execution_for(gradient_accumulation: int) -> int:
    """The derived ``steps_per_execution``: the smallest multiple of the accumulation count that
    is at least :data:`MIN_STEPS_PER_EXECUTION`, so an execution always holds whole optimizer
    steps (IPU Keras requires steps_per_execution to be a multiple of the accumulation count)."""
    return -(-MIN_STEPS_PER_EXECUTION // gradient_accumulation) * gradient_accumulation


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise InvalidTypeError(f"mlp_timing: a configuration must be a dict; got {config!r}")
    unknown = sorted(set(config) - set(MLP_TIMING_DEFAULTS))
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), MLP_TIMING_DEFAULTS, n=1)
            if close:
                hints.append(f"{key!r} -> {close[0]!r}")
        hint = f" Did you mean {', '.join(hints)}?" if hints else ""
        raise ConfigurationError(
            f"mlp_timing: unknown configuration key(s) {unknown}; it reads "
            f"{', '.join(MLP_TIMING_DEFAULTS)}.{hint}"
        )
    settings = {**MLP_TIMING_DEFAULTS, **config}
    for key in ("ipus", "batch_size", "steps_per_execution", "gradient_accumulation"):
        value = settings[key]
        if key == "steps_per_execution" and value == AUTO:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            also = ' or "auto"' if key == "steps_per_execution" else ""
            raise ConfigurationError(
                f"mlp_timing: {key} must be a positive int{also}; got {value!r}"
            )
    if settings["steps_per_execution"] == AUTO:
        settings["steps_per_execution"] = steps_per_execution_for(settings["gradient_accumulation"])
    if settings["executions"] not in (1, 2) or isinstance(settings["executions"], bool):
        raise ConfigurationError(
            f"mlp_timing: executions must be 1 or 2 (the figures need no more); got "
            f"{settings['executions']!r}"
        )
    for key in ("system", "host", "precision"):
        if not isinstance(settings[key], str):
            raise ConfigurationError(f"mlp_timing: {key} must be a string; got {settings[key]!r}")
    rate = settings["host_dataset_rate"]
    if not isinstance(rate, int | float) or isinstance(rate, bool) or rate < 0:
        raise ConfigurationError(
            f"mlp_timing: host_dataset_rate must be a number of samples/s >= 0 (0 = unlimited); "
            f"got {rate!r}"
        )
    settings["host_dataset_rate"] = float(rate)
    if not isinstance(settings["numerics"], bool):
        raise ConfigurationError(
            f"mlp_timing: numerics must be true or false; got {settings['numerics']!r}"
        )
    return settings


def check_mlp_timing_config(config: dict[str, Any]) -> None:
    """Raise ValueError if :func:`mlp_timing` cannot read ``config`` (an unknown key, a value of
    the wrong type); a sweep checks every configuration with this before running any."""
    _settings(config)


def mlp_timing(config: dict[str, Any]) -> dict[str, Any]:
    """Train the seed MLP on a simulated IPU system and return the run's figures.

    Configuration keys (all optional; see :data:`MLP_TIMING_DEFAULTS`): ``system`` (a preset
    name or system TOML path; "" picks the smallest GC200 system holding ``ipus``), ``host`` (a
    host preset, ``cfg.ipusim.host``; "" = the system's own), ``ipus``
    (``auto_select_ipus``; one replica per IPU), ``batch_size``, ``steps_per_execution`` (per
    replica; ``"auto"``, the default, is :func:`steps_per_execution_for` the accumulation count,
    so every accumulation count fits), ``gradient_accumulation`` (steps per replica),
    ``precision`` (``fp32``, ``fp16.16``, ``fp16.32``), ``executions`` (1 or 2),
    ``host_dataset_rate`` (samples/s, 0 = unlimited), ``numerics``.

    The data are zeros: the timing depends only on shapes, and untouched zero pages cost no
    memory even for a batch too large to fit on the IPU (which raises
    :class:`~ipusim.lowering.memory.OutOfMemoryError` before anything runs).

    The function configures this process's IPU system (the configuration registry is per
    process) and restarts the Keras session, so it gives the same figures in any process.
    """
    import numpy as np

    import ipusim
    from ipusim import keras
    from ipusim.config import reset_ipu_configuration
    from ipusim.demo import seed_mlp

    settings = _settings(config)
    reset_ipu_configuration()
    keras.backend.clear_session()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = settings["ipus"]
    cfg.ipusim.system = settings["system"]
    cfg.ipusim.host = settings["host"]
    cfg.ipusim.precision = settings["precision"]
    cfg.ipusim.host_dataset_rate = settings["host_dataset_rate"]
    cfg.ipusim.numerics = settings["numerics"]
    cfg.configure_ipu_system()
    try:
        samples = (
            settings["batch_size"]
            * settings["steps_per_execution"]
            * settings["ipus"]
            * settings["executions"]
        )
        x = np.zeros((samples, 28, 28), dtype=np.float32)
        y = np.zeros(samples, dtype=np.int32)
        with ipusim.IPUStrategy().scope():
            model = seed_mlp()
            model.compile(
                optimizer="rmsprop",
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                steps_per_execution=settings["steps_per_execution"],
            )
            if settings["gradient_accumulation"] > 1:
                model.set_gradient_accumulation_options(
                    gradient_accumulation_steps_per_replica=settings["gradient_accumulation"]
                )
            history = model.fit(x, y, batch_size=settings["batch_size"], epochs=1, verbose=0)
        return report_row(history.simulation)
    finally:
        reset_ipu_configuration()


def warm_up_mlp_timing() -> None:
    """Load what every configuration needs, without running one or touching this process's IPU
    configuration or Keras session: the modules of Keras, lowering, the engine and the reports,
    and Numba's compiler (whose first use in a process costs about 0.5 s: the tile-mapping
    kernel of the memory plan runs in every configuration). A local sweep calls this in its own
    process before forking workers, so each worker starts warm."""
    import numpy as np

    import ipusim.config
    import ipusim.engine
    import ipusim.keras
    import ipusim.keras.extensions.simulation
    import ipusim.lowering
    import ipusim.strategy
    import ipusim.trace.report
    import ipusim.trace.reports  # noqa: F401
    from ipusim.hardware import load_system
    from ipusim.kernels.tilemap import spread_over_tiles

    load_system("IPU")
    spread_over_tiles(np.ones(1, dtype=np.int64), 1, 1)


mlp_timing.validate_config = check_mlp_timing_config  # type: ignore[attr-defined]
mlp_timing.warm_up = warm_up_mlp_timing  # type: ignore[attr-defined]
