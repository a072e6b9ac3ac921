"""``keras.ipu.optimizers`` (Graphcore's Keras, SDK 3.x): automatic loss scaling and gradient
accumulation optimizers."""

from ipusim.keras.optimizers.accumulation import GradientAccumulationOptimizer
from ipusim.keras.optimizers.als import ALSGradientAccumulationOptimizer, ALSOptimizer

__all__ = ["ALSGradientAccumulationOptimizer", "ALSOptimizer", "GradientAccumulationOptimizer"]
