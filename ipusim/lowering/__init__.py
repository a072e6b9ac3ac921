"""Lowering: step graphs + options + system -> Programs for the engine."""

from ipusim.errors import OutOfMemoryError
from ipusim.lowering.context import PipelineSpec, StepDescription
from ipusim.lowering.lower import lower
from ipusim.lowering.program import (
    Block,
    IPUMemoryPlan,
    MemoryItem,
    PipelineProgram,
    Program,
    StageProgram,
    Superstep,
    Timed,
)
from ipusim.lowering.update import OptimizerCost

__all__ = [
    "Block",
    "IPUMemoryPlan",
    "MemoryItem",
    "OptimizerCost",
    "PipelineSpec",
    "OutOfMemoryError",
    "PipelineProgram",
    "Program",
    "StageProgram",
    "StepDescription",
    "Superstep",
    "Timed",
    "lower",
]
