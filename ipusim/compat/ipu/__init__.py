"""``ipu`` for ported scripts: ``from tensorflow.python import ipu`` becomes
``from ipusim.compat import ipu``.

Mirrors ``tensorflow.python.ipu`` (IPU TensorFlow 2.5): ``ipu.config`` (``IPUConfig`` and the
configuration functions), ``ipu.ipu_strategy`` (``IPUStrategy``),
``ipu.ipu_multi_worker_strategy`` (``IPUMultiWorkerStrategy``), ``ipu.keras``
(``PipelineStage`` and the stage-assignment classes), ``ipu.ops.pipelining_ops`` (also
``ipu.pipelining_ops``), ``ipu.ipu_infeed_queue``, ``ipu.ipu_outfeed_queue``, ``ipu.loops``,
``ipu.ipu_compiler``, ``ipu.scopes``, ``ipu.optimizers``, ``ipu.gradient_accumulation``,
``ipu.dataset_benchmark``, ``ipu.serving`` and ``ipu.utils``. The custom-training-loop names (feeds, loops,
``pipeline``, the optimizer wrappers) come from ``ipusim.compat.runtime`` on first use.
"""

import importlib

from ipusim.compat.ipu import (  # type: ignore[attr-defined]
    # config, dataset_benchmark, the strategies, pipelining_ops and serving are aliases of other
    # modules, the feeds, loops and ipu_compiler lazy forwards, all made by the import hook of
    # ipusim.compat._alias (MODULES, FORWARDS), which mypy cannot follow
    config,
    dataset_benchmark,
    functional_ops,
    gradient_accumulation,
    ipu_compiler,
    ipu_infeed_queue,
    ipu_multi_worker_strategy,
    ipu_outfeed_queue,
    ipu_strategy,
    keras,
    loops,
    ops,
    optimizers,
    pipelining_ops,
    scopes,
    serving,
    utils,
)
from ipusim.compat.ipu.functional_ops import outlined_function

__all__ = [
    "config",
    "dataset_benchmark",
    "functional_ops",
    "gradient_accumulation",
    "ipu_compiler",
    "ipu_infeed_queue",
    "ipu_multi_worker_strategy",
    "ipu_outfeed_queue",
    "ipu_strategy",
    "keras",
    "loops",
    "ops",
    "optimizers",
    "outlined_function",
    "pipelining_ops",
    "scopes",
    "serving",
    "utils",
]

#: Submodules that load ipusim's custom-training-loop runtime: imported on first use.
_LAZY_SUBMODULES = (
    "cross_replica_optimizer",
    "embedding_ops",
    "nn_ops",
    "rand_ops",
    "gradient_accumulation_optimizer",
    "ipu_estimator",
    "ipu_pipeline_estimator",
    "ipu_run_config",
)


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        if name in ("embedding_ops", "nn_ops", "rand_ops"):  # ipu.nn_ops is ipu.ops.nn_ops
            return importlib.import_module(f"{__name__}.ops.{name}")
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
