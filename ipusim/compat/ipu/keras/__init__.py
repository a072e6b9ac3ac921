"""``ipu.keras`` (IPU TensorFlow 2.5): pipeline stages and stage assignments of Keras models.

``ipu.keras.PipelineStage``, the ``*PipelineStageAssignment`` classes and the extension classes,
with ``ipu.keras.extensions`` (which also exports ``ModelLayerPipelineStageAssignment`` and
``ModelExtension``), ``ipu.keras.layers`` and ``ipu.keras.losses`` (ipusim's Keras layers and
losses). The SDK 2.1 model classes (``ipu.keras.Sequential``, ``Model``, ``PipelineSequential``,
``PipelineModel``, ``SequentialPipelineModel``) raise the porting error IPU TensorFlow raises
(:mod:`.legacy`).
"""

from ipusim.compat.ipu.keras import (  # type: ignore[attr-defined]
    # extensions, layers and losses are aliases of ipusim modules, made by the import hook of
    # ipusim.compat._alias (MODULES), which mypy cannot follow
    extensions,
    layers,
    legacy,
    losses,
    optimizers,
)
from ipusim.compat.ipu.keras.legacy import (  # noqa: F401 - in __all__ (legacy.__all__)
    IPUModel,
    IPUSequential,
    Model,
    PipelineModel,
    PipelineSequential,
    Sequential,
    SequentialPipelineModel,
)
from ipusim.keras.extensions import (
    FunctionalExtension,
    FunctionalLayerPipelineStageAssignment,
    ModelExtension,
    ModelLayerPipelineStageAssignment,
    PipelineStage,
    SequentialExtension,
    SequentialLayerPipelineStageAssignment,
)

__all__ = [
    *legacy.__all__,
    "FunctionalExtension",
    "FunctionalLayerPipelineStageAssignment",
    "ModelExtension",
    "ModelLayerPipelineStageAssignment",
    "PipelineStage",
    "SequentialExtension",
    "SequentialLayerPipelineStageAssignment",
    "extensions",
    "layers",
    "losses",
    "optimizers",
]
