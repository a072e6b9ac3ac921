"""``ipu.ipu_run_config``: ``IPURunConfig`` and the ``RunConfig`` that carries it (IPU
TensorFlow 2.x, for ``IPUEstimator`` and ``IPUPipelineEstimator``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ipusim.compat.tf import estimator
from ipusim.errors import ConfigurationError

__all__ = ["IPURunConfig", "RunConfig"]


@dataclass
class IPURunConfig:
    """How an IPU estimator runs on the IPU.

    Args:
        iterations_per_loop: steps per device execution (one ``loops.repeat`` on the IPU);
            ``train(steps=...)`` must be a multiple of it.
        ipu_options: the ``IPUConfig`` to configure the system with (None: the active one).
        compile_summary: accepted for compatibility (ipusim writes its own report).
        num_replicas: data-parallel replicas (combine gradients with
            ``ipu.optimizers.CrossReplicaOptimizer``).
        num_shards: IPUs per replica (1, or the pipeline's device count).
        autosharding: accepted for compatibility; must stay False (not simulated).
        ordinal: the device ordinal (0).
        prefetch_depth: infeed prefetch depth (None: the default).

    Raises:
        ConfigurationError: a count below 1, or autosharding.
    """

    iterations_per_loop: int = 1
    ipu_options: Any = None
    compile_summary: bool = False
    num_replicas: int = 1
    num_shards: int = 1
    autosharding: bool = False
    ordinal: int = 0
    prefetch_depth: int | None = None

    def __post_init__(self) -> None:
        for name in ("iterations_per_loop", "num_replicas", "num_shards"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(
                    f"IPURunConfig: {name} must be a positive int, received {value!r}"
                )
        if self.autosharding:
            raise ConfigurationError(
                "IPURunConfig(autosharding=True): automatic sharding is not simulated by "
                "ipusim; pipeline the model with IPUPipelineEstimator instead"
            )


class RunConfig(estimator.RunConfig):
    """``tf.estimator.RunConfig`` plus ``ipu_run_config`` (and ``master``, unused)."""

    def __init__(
        self, ipu_run_config: IPURunConfig | None = None, master: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.ipu_run_config = ipu_run_config or IPURunConfig()
        self.master = master

    def replace(self, **kwargs: Any) -> RunConfig:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        own = {"ipu_run_config": self.ipu_run_config, "master": self.master}
        return RunConfig(**{**own, **values, **kwargs})
