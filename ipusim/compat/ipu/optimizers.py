"""``ipu.optimizers``: the gradient-accumulation and cross-replica optimizer wrappers.

``GradientAccumulationReductionMethod`` is ipusim's own. The wrappers
(``GradientAccumulationOptimizerV2``, ``CrossReplicaOptimizer``,
``CrossReplicaGradientAccumulationOptimizerV2``, ...) come from
``ipusim.compat.runtime.optimizers`` (``AutomaticLossScalingOptimizer`` from
``ipusim.compat.runtime.als``) (the custom-training-loop runtime) on first use. Keras models
never need them: ``set_gradient_accumulation_options`` wraps the compiled optimizer itself.
"""

from ipusim.compat._alias import runtime_getattr
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod

_RUNTIME_NAMES = (
    "AutomaticLossScalingOptimizer",
    "CrossReplicaGradientAccumulationOptimizer",
    "CrossReplicaGradientAccumulationOptimizerV2",
    "CrossReplicaOptimizer",
    "GradientAccumulationOptimizer",
    "GradientAccumulationOptimizerV2",
    "IpuOptimizer",
    "MapGradientOptimizer",
)

__getattr__ = runtime_getattr(
    __name__, ("ipusim.compat.runtime.optimizers", "ipusim.compat.runtime.als"), _RUNTIME_NAMES
)

__all__ = ["GradientAccumulationReductionMethod", *_RUNTIME_NAMES]
