"""What ipusim does not simulate, and why: the table behind docs/api.md and ipusim's errors.

A TensorFlow / Keras name that ipusim's compatibility namespaces lack raises
:class:`ipusim.errors.NotSimulatedError` (or :class:`~ipusim.errors.NotSimulatedModuleError` for
a module path); its message comes from :func:`message`, with the reason and what to use instead
when :data:`NOT_SIMULATED` has them. docs/api.md (``python -m bench.api_coverage.write_docs``)
lists every name of the real API with its status.

Names are spelled as TensorFlow documents them (``tf.keras.layers.X``, ``tf.python.ipu.X``);
:func:`public_name` turns a module path a script imports into that spelling. A key ending in
``.*`` covers every name below it.
"""

from __future__ import annotations

__all__ = ["NOT_SIMULATED", "lookup", "message", "public_name", "public_module"]

_GPU = "ipusim simulates IPU systems; there is no GPU or TPU to configure"
_STRATEGY = (
    "a GPU / TPU / parameter-server distribution strategy; ipusim simulates IPU replication",
    "IPUStrategy with IPUConfig.auto_select_ipus = replicas x IPUs per replica "
    "(or IPUMultiWorkerStrategy for several processes)",
)
_DEVICE_MEMORY = (
    "GPU memory queries; the IPU's memory is planned before anything runs",
    "the simulation report's memory table (report.memory, ipusim report)",
)
_TF_GRAPH = (
    "ipusim has no TensorFlow graph or profiler to export",
    "the simulated execution trace of the report (trace.json, for Perfetto / PopVision)",
)
_STRINGS = (
    "sparse and ragged tensors do not exist on the IPU",
    "prepare sparse data with NumPy / Python on the host",
)
_NOT_IN_SCOPE = (
    "not part of what IPU TensorFlow 2 programs run on the IPU",
    "the TensorFlow installation it belongs to, outside ipusim",
)

_TF1_SESSION = (
    "a TF1 top-level name that TensorFlow 2 (and IPU TensorFlow 2) removed",
    "its tf.compat.v1 spelling (tf.compat.v1.Session, global_variables_initializer, "
    "layers.dense), which ipusim simulates, or a tf.function run with IPUStrategy.run",
)

#: public name (or ``prefix.*``) -> (reason it is not simulated, what to use instead).
NOT_SIMULATED: dict[str, tuple[str, str]] = {
    "tf.audio.*": _NOT_IN_SCOPE,
    "tf.compiler.*": _NOT_IN_SCOPE,
    "tf.lite.*": ("TensorFlow Lite targets phones and microcontrollers", _NOT_IN_SCOPE[1]),
    "tf.mlir.*": _NOT_IN_SCOPE,
    "tf.sysconfig.*": _NOT_IN_SCOPE,
    "tf.test.*": _NOT_IN_SCOPE,
    "tf.python.platform.*": (
        "TensorFlow's internal app / flags / gfile helpers (its `test` module is simulated)",
        "Python's argparse, logging and file functions",
    ),
    "tf.tpu.*": (_GPU, "ipusim.compat.ipu (IPUConfig, IPUStrategy)"),
    "tf.xla.*": (
        "IPU programs are always compiled whole by the Poplar XLA backend",
        "tf.function(jit_compile=True) inside an IPUStrategy",
    ),
    "tf.profiler.*": _TF_GRAPH,
    "tf.dtensor.*": _STRATEGY,
    "tf.raw_ops.*": (
        "TensorFlow's kernels one by one; ipusim's ops are its own graph IR",
        "the public tf / tf.math / tf.nn functions",
    ),
    "tf.security.*": _NOT_IN_SCOPE,
    "tf.tools.*": _NOT_IN_SCOPE,
    "tf.distribute.Server": _STRATEGY,
    "tf.distribute.coordinator.*": _STRATEGY,
    "tf.config.experimental_connect_to_cluster": _STRATEGY,
    "tf.config.experimental_connect_to_host": _STRATEGY,
    "tf.summary.audio": (
        "audio summaries (WAV encoding) are not written by ipusim's summary writer",
        "tf.summary.write with the samples, or tf.summary.histogram",
    ),
    "tf.summary.trace_on": _TF_GRAPH,
    "tf.summary.trace_off": _TF_GRAPH,
    "tf.summary.trace_export": _TF_GRAPH,
    "tf.summary.graph": _TF_GRAPH,
    "tf.strings.*": (
        "ipusim runs a subset of tf.strings on the host (strings never go to the IPU); this op "
        "is not in it",
        "the tf.strings ops ipusim has (length, lower, upper, strip, join, reduce_join, "
        "to_number, as_string, regex_full_match, regex_replace, substr) or Python's str "
        "methods on .numpy() values",
    ),
    "tf.sparse.*": _STRINGS,
    "tf.ragged.*": _STRINGS,
    "tf.RaggedTensor": _STRINGS,
    "tf.SparseTensor": _STRINGS,
    "tf.RaggedTensorSpec": _STRINGS,
    "tf.SparseTensorSpec": _STRINGS,
    "tf.distribute.MirroredStrategy": _STRATEGY,
    "tf.distribute.MultiWorkerMirroredStrategy": _STRATEGY,
    "tf.distribute.OneDeviceStrategy": _STRATEGY,
    "tf.distribute.TPUStrategy": _STRATEGY,
    "tf.distribute.ParameterServerStrategy": _STRATEGY,
    "tf.distribute.experimental.*": _STRATEGY,
    "tf.distribute.cluster_resolver.TPUClusterResolver": _STRATEGY,
    "tf.distribute.HierarchicalCopyAllReduce": _STRATEGY,
    "tf.distribute.NcclAllReduce": _STRATEGY,
    "tf.distribute.ReductionToOneDevice": _STRATEGY,
    "tf.distribute.CrossDeviceOps": _STRATEGY,
    "tf.compat.v1.train.SyncReplicasOptimizer": _STRATEGY,
    "tf.config.experimental.set_memory_growth": (_GPU, "nothing: IPU memory is planned"),
    "tf.config.experimental.get_memory_growth": (_GPU, "nothing: IPU memory is planned"),
    "tf.config.experimental.get_memory_info": _DEVICE_MEMORY,
    "tf.config.experimental.get_memory_usage": _DEVICE_MEMORY,
    "tf.config.experimental.reset_memory_stats": _DEVICE_MEMORY,
    "tf.config.experimental.set_virtual_device_configuration": (_GPU, "IPUConfig"),
    "tf.config.experimental.get_virtual_device_configuration": (_GPU, "IPUConfig"),
    "tf.config.set_logical_device_configuration": (_GPU, "IPUConfig"),
    "tf.config.get_logical_device_configuration": (_GPU, "IPUConfig"),
    "tf.config.LogicalDeviceConfiguration": (_GPU, "IPUConfig"),
    "tf.config.experimental.VirtualDeviceConfiguration": (_GPU, "IPUConfig"),
    "tf.config.experimental.enable_tensor_float_32_execution": (
        "TensorFloat-32 is an NVIDIA GPU format",
        "IPUConfig.ipusim.precision / Keras mixed precision for half-precision IPU runs",
    ),
    "tf.config.experimental.tensor_float_32_execution_enabled": (
        "TensorFloat-32 is an NVIDIA GPU format",
        "IPUConfig.ipusim.precision",
    ),
    "tf.config.experimental.enable_mlir_bridge": _NOT_IN_SCOPE,
    "tf.config.experimental.disable_mlir_bridge": _NOT_IN_SCOPE,
    "tf.config.experimental.enable_op_determinism": (
        "ipusim is always deterministic (same seed, same numbers)",
        "nothing",
    ),
    "tf.keras.utils.experimental.DatasetCreator": _STRATEGY,
    "tf.keras.callbacks.experimental.BackupAndRestore": (
        "fault tolerance for multi-worker GPU training",
        "ModelCheckpoint",
    ),
    "tf.keras.layers.DenseFeatures": (
        "it consumes tf.feature_column definitions, which ipusim does not have",
        "build the feature vector with Keras layers (Normalization, CategoryEncoding, "
        "Embedding, Concatenate)",
    ),
    "tf.keras.layers.HashedCrossing": (
        "it crosses features into strings hashed with TensorFlow's FingerprintCat64, which "
        "ipusim does not implement (its Hashing covers integer inputs)",
        "cross and hash the features in the input pipeline with NumPy",
    ),
    "tf.keras.layers.experimental.preprocessing.HashedCrossing": (
        "as tf.keras.layers.HashedCrossing",
        "cross and hash the features in the input pipeline with NumPy",
    ),
    "tf.Session": _TF1_SESSION,
    "tf.global_variables_initializer": _TF1_SESSION,
    "tf.layers.*": _TF1_SESSION,
    "tf.python.ipu.rnn_ops.*": (
        "the TF1 Popnn layers other than PopnnLSTM and PopnnGRU (the dynamic-length and AUGRU "
        "variants)",
        "PopnnLSTM / PopnnGRU, or the Keras Popnn layers: ipu_tensorflow_addons.keras.layers",
    ),
    "tf.keras.layers.SpectralNormalization": (
        "it overwrites the wrapped layer's kernel with a power-iteration estimate before each "
        "training step's update, an assignment ipusim's step does not express",
        "train without it",
    ),
}

# The op namespaces' entries (tf, tf.math, tf.nn, tf.linalg, tf.random, tf.keras.backend).
from ipusim.compat.not_simulated_ops import NOT_SIMULATED_OPS  # noqa: E402

NOT_SIMULATED.update(NOT_SIMULATED_OPS)


def _respell(name: str, table: tuple[tuple[str, str], ...]) -> str | None:
    """``name`` with the first of ``table``'s prefixes it starts with respelled, or None."""
    for prefix, public in table:
        if name == prefix or name.startswith(prefix + "."):
            return public + name[len(prefix) :]
    return None


def public_name(dotted: str) -> str:
    """``tensorflow.keras.layers.Dense`` / ``keras.layers.Dense`` -> ``tf.keras.layers.Dense``."""
    return _respell(dotted, _PUBLIC_PREFIXES) or dotted


#: How scripts spell a module (first match wins) -> TensorFlow's documented spelling.
_PUBLIC_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.python.keras", "tf.keras"),
    ("tensorflow", "tf"),
    ("keras", "tf.keras"),
)

#: ipusim module -> the public module it stands for (first match wins).
_MODULES: tuple[tuple[str, str], ...] = (
    ("ipusim.compat.tf", "tf"),
    ("ipusim.compat.ipu", "tf.python.ipu"),
    ("ipusim.compat.keras", "tf.keras"),
    ("ipusim.keras", "tf.keras"),
)


def public_module(module_name: str) -> str | None:
    """The public spelling of the ipusim module ``module_name`` stands for, or None."""
    return _respell(module_name, _MODULES)


def lookup(name: str) -> tuple[str, str] | None:
    """(reason, instead) for the public ``name``, from :data:`NOT_SIMULATED`, or None."""
    parts = name.split(".")
    keys = [name] + [".".join(parts[:end]) + ".*" for end in range(len(parts), 0, -1)]
    return next((NOT_SIMULATED[k] for k in keys if k in NOT_SIMULATED), None)


def message(name: str) -> str:
    """The error text for a public ``name`` ipusim lacks (with the table's reason, if any)."""
    public = public_name(name)
    entry = lookup(public)
    if entry is None:
        return (
            f"`{public}` is not simulated by ipusim (yet); docs/api.md lists what is, and "
            "what to use instead"
        )
    reason, instead = entry
    return (
        f"`{public}` is not simulated by ipusim: {reason}. Use instead: {instead}. See docs/api.md"
    )
