"""Serving: export a model or function for inference and load it back with its simulated timing.

``model.export_for_ipu_serving(path, batch_size=...)`` (Keras models created in an IPUStrategy
scope), :func:`export_keras`, :func:`export_single_step` and :func:`export_pipeline` write an
export in ipusim's own format (JSON + ``.npz`` arrays, no pickle, written atomically): the
inference program with frozen weights, its input signature, the on-device loop's ``iterations``,
the pipeline, and the simulated execution. :func:`load` returns a :class:`ServedModel`: call it
with one request to get the outputs; ``.timing`` holds the simulated per-request latency and
throughput (:class:`ServingTiming`).
"""

from ipusim.serving.export import export_keras, export_pipeline, export_single_step
from ipusim.serving.manifest import ExportNotFoundError
from ipusim.serving.program import ExportError
from ipusim.serving.served import ServedModel, load
from ipusim.serving.timing import ServingTiming

__all__ = [
    "ExportError",
    "ExportNotFoundError",
    "ServedModel",
    "ServingTiming",
    "export_keras",
    "export_pipeline",
    "export_single_step",
    "load",
]
