"""``keras.ipu``: the IPU names of Graphcore's Keras (SDK 3 spelling, e.g. ``keras.ipu.PipelineStage``)."""

from ipusim.keras.extensions import (
    FunctionalExtension,
    FunctionalLayerPipelineStageAssignment,
    ModelExtension,
    ModelLayerPipelineStageAssignment,
    PipelineStage,
    SequentialExtension,
    SequentialLayerPipelineStageAssignment,
)
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod
from ipusim.keras.ipu import layers, optimizers
from ipusim.pipelining import PipelineSchedule, PipelineStageOptions, RecomputationMode

__all__ = [
    "FunctionalExtension",
    "FunctionalLayerPipelineStageAssignment",
    "GradientAccumulationReductionMethod",
    "ModelExtension",
    "ModelLayerPipelineStageAssignment",
    "PipelineSchedule",
    "PipelineStage",
    "PipelineStageOptions",
    "RecomputationMode",
    "SequentialExtension",
    "SequentialLayerPipelineStageAssignment",
    "layers",
    "optimizers",
]
