"""``ipu.keras.optimizers`` (IPU TensorFlow 2.5): the Keras optimizer wrappers.

``AutomaticLossScalingOptimizer`` (:mod:`ipusim.keras.optimizers.als_tf25`) and
``GradientAccumulationOptimizer`` (:mod:`ipusim.keras.optimizers.accumulation`). A Keras model
combines its replicas' gradients itself (``fit`` averages them), so ``CrossReplicaOptimizer``,
``MapGradientOptimizer`` and ``IpuOptimizer`` of this module are not provided: asking for them
raises ``UnsupportedError`` with what to use instead.
"""

from typing import Any

from ipusim.errors import UnsupportedError
from ipusim.keras.optimizers.accumulation import GradientAccumulationOptimizer
from ipusim.keras.optimizers.als_tf25 import AutomaticLossScalingOptimizer

__all__ = ["AutomaticLossScalingOptimizer", "GradientAccumulationOptimizer"]

_NOT_PROVIDED = {
    "CrossReplicaOptimizer": "a Keras model averages its replicas' gradients itself",
    "MapGradientOptimizer": "use ipu.optimizers.MapGradientOptimizer in a custom training loop",
    "IpuOptimizer": "wrap a keras.optimizers optimizer directly",
}


def __getattr__(name: str) -> Any:
    if name in _NOT_PROVIDED:
        raise UnsupportedError(
            f"ipu.keras.optimizers.{name} is not simulated by ipusim: {_NOT_PROVIDED[name]}"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
