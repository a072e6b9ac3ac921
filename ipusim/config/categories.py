"""The categories of :class:`~ipusim.config.IPUConfig` that mirror IPU TensorFlow 2 (SDK 2.5).

Each class lists its options (name, default, meaning) in ``_FIELDS`` and, where IPU TensorFlow
checks values when the system is configured, overrides ``_validate``. These classes are
internal: users reach them only as attributes of an ``IPUConfig``.
"""

from __future__ import annotations

from ipusim.config._base import Category, Option, _ConfigBase
from ipusim.config._env import running_on_ipu_model
from ipusim.config.enums import (
    DeviceConnectionType,
    MergeRemoteBuffersBehaviour,
    SchedulingAlgorithm,
    StochasticRoundingBehaviour,
)
from ipusim.errors import ConfigurationError

_AMP_NOTE = (
    "The option most often set is `availableMemoryProportion`: the fraction of each tile's "
    "memory the operation may use for temporary data (0.1 means 10 %)."
)


_PARTIALS_NOTE = (
    ' `partialsType` ("half" or "float") sets the type of the partial sums of half-precision '
    "products; ipusim computes with it (default: half for ipusim.precision 'fp16.16', float "
    "otherwise, as PopLibs)."
)


def _check_partials(config: _ConfigBase, name: str) -> None:
    value = config.poplar_options.get("partialsType")
    if value is not None and str(value).lower() not in ("half", "float"):
        raise ConfigurationError(
            f"{config._full_name(name)}['partialsType'] = {value!r}, but PopLibs accepts "
            "'half' or 'float'. Use 'half' for fp16 partial sums or 'float' for fp32 ones."
        )


class _ConvolutionConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "poplar_options",
            {},
            "PopLibs convolution options (a dict of option name to value) applied to every "
            "convolution when the graph is compiled. " + _AMP_NOTE + _PARTIALS_NOTE,
        ),
    )

    def _validate(self) -> None:
        _check_partials(self, "poplar_options")


class _IPUDeviceConnectionConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "type",
            DeviceConnectionType.ALWAYS,
            "When to attach to the IPU device; a DeviceConnectionType. ALWAYS attaches while "
            "configuring, ON_DEMAND when something first runs, PRE_COMPILE and NEVER never "
            "attach (PRE_COMPILE compiles and returns zeros for device results).",
        ),
        Option(
            "version",
            "",
            'IPU hardware version to compile for: "ipu1", "ipu2" or "" (the default). It must '
            "be set when `device_connection.type` is PRE_COMPILE or NEVER, because there is "
            "no device to ask.",
        ),
        Option(
            "enable_remote_buffers",
            False,
            "For PRE_COMPILE, NEVER and ON_DEMAND: declares that the system that will run the "
            "programs supports remote buffers (Streaming Memory). Ignored for ALWAYS, where "
            "the attached device is queried instead.",
        ),
    )

    def _validate(self) -> None:
        if (
            self.type in (DeviceConnectionType.PRE_COMPILE, DeviceConnectionType.NEVER)
            and self.version == ""
        ):
            raise ConfigurationError(
                f"{self._full_name('type')} is {self.type} but {self._full_name('version')} "
                f"is empty: without a device the IPU version must be given. Set "
                f'{self._full_name("version")} = "ipu2" (or "ipu1").'
            )


class _SliceConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "poplar_options",
            {},
            "PopLibs slice options (a dict) passed to the multiSlice, multiUpdate and "
            "multiUpdateAdd operations, which embeddings mostly generate. " + _AMP_NOTE,
        ),
    )


class _MultiReplicaDistributionConfig(_ConfigBase):
    _FIELDS = (
        Option("process_index", 0, "Index of this process among the collaborating processes."),
        Option(
            "process_count",
            0,
            "Number of processes that each run a subset of the replicas of one program; 0 (the "
            "default) disables multi-replica distribution. The global replication factor is "
            "the local one times this count.",
        ),
    )

    def _validate(self) -> None:
        if self.process_count > 0 and running_on_ipu_model():
            raise ConfigurationError(
                f"{self._full_name('process_count')} = {self.process_count}, but multi-replica "
                "distribution cannot run on the IPU Model (TF_POPLAR_FLAGS contains "
                "--use_ipu_model). Set it to 0 or run without the IPU Model."
            )
        if self.process_count and not 0 <= self.process_index < self.process_count:
            raise ConfigurationError(
                f"{self._full_name('process_index')} = {self.process_index} is outside "
                f"[0, {self._full_name('process_count')}) = [0, {self.process_count}). Give "
                "each process a distinct index from 0 to process_count - 1."
            )


class _ExperimentalConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "always_rearrange_copies_on_the_host",
            False,
            "When streamed data has a different layout on the host and on the device, "
            "rearrange it on the host (costing latency) instead of on the device.",
        ),
        Option(
            "enable_remote_buffer_embedding",
            False,
            "Make HostEmbedding keep its table in Poplar remote buffers (Streaming Memory).",
        ),
        Option(
            "enable_prng_stability",
            False,
            "Manage the random seeds so that replicas using stochastic rounding keep their "
            "weights from drifting apart.",
        ),
        Category(
            "multi_replica_distribution",
            _MultiReplicaDistributionConfig,
            "Options for running the replicas of one program across several processes.",
        ),
    )


class _FloatingPointBehaviourConfig(_ConfigBase):
    _FIELDS = (
        Option("inv", False, "Raise an exception on an IEEE 754 invalid operation."),
        Option("div0", False, "Raise an exception on a floating-point division by zero."),
        Option("oflo", False, "Raise an exception on a floating-point overflow."),
        Option(
            "esr",
            StochasticRoundingBehaviour.OFF,
            "Stochastic rounding, a StochasticRoundingBehaviour: OFF (the default), ON or "
            "REPLICA_IDENTICAL_ONLY. A bool is not accepted; use "
            "StochasticRoundingBehaviour.from_bool() to convert one.",
        ),
        Option(
            "nanoo",
            False,
            "Half-precision overflow produces NaN instead of saturating to +-65504.",
        ),
        Option(
            "set_all",
            False,
            "Turn on inv, div0, oflo, nanoo and stochastic rounding (esr = ON) whatever their "
            "own settings.",
        ),
    )


class _IOTilesConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "num_io_tiles",
            0,
            "Tiles per IPU reserved for I/O (rounded up to an even count, at most 192), taken "
            "from the compute tiles: the compute graph runs on the rest. The I/O overlaps "
            "compute only with `place_ops_on_io_tiles=True` (and the stream buffers fitting "
            "the I/O tiles).",
        ),
        Option(
            "place_ops_on_io_tiles",
            False,
            "Place the I/O operations (infeeds, outfeeds) on the I/O tiles. Needs "
            "`io_tiles.num_io_tiles` > 0.",
        ),
        Option(
            "available_memory_proportion",
            0.9,
            "Fraction of the I/O tiles' memory usable for data; the rest is assumed to hold "
            "code. Data that does not fit is not placed on the I/O tiles (with a warning).",
        ),
    )

    def _validate(self) -> None:
        if self.place_ops_on_io_tiles and self.num_io_tiles == 0:
            raise ConfigurationError(
                f"{self._full_name('place_ops_on_io_tiles')} is True but "
                f"{self._full_name('num_io_tiles')} is 0: there are no I/O tiles to place "
                f"operations on. Set {self._full_name('num_io_tiles')} to the number of tiles "
                "to reserve, or turn place_ops_on_io_tiles off."
            )


class _IPUModelConfig(_ConfigBase):
    _FIELDS = (
        Option("compile_ipu_code", True, "Compile IPU code when running on the IPU Model."),
        Option(
            "tiles_per_ipu",
            0,
            "Tiles per IPU of the IPU Model; 0 (the default) uses the standard count for "
            "`ipu_model.version`.",
        ),
        Option("version", "ipu2", 'IPU version the IPU Model emulates: "ipu1" or "ipu2".'),
    )

    def _validate(self) -> None:
        if self.version == "" and running_on_ipu_model():
            raise ConfigurationError(
                f"{self._full_name('version')} is empty but the IPU Model is in use "
                '(TF_POPLAR_FLAGS contains --use_ipu_model). Set it to "ipu2" or "ipu1".'
            )


class _IpuAlgebraicSimplifierConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "fast",
            False,
            "Allow arbitrary reassociation and transformation of arithmetic, with no accuracy "
            "guarantee (faster code, results may differ from strict IEEE 754).",
        ),
        Option(
            "dot_strength",
            True,
            "Turn dot products whose operand has only batch and contracting dimensions into "
            "elementwise multiplications.",
        ),
    )


class _MatmulConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "clear_pass_type",
            False,
            "Do not tell PopLibs whether a matmul is a forward, gradient or weight-update "
            'pass ("Pass" type); saves memory in some models.',
        ),
        Option(
            "poplar_options",
            {},
            "PopLibs matmul options (a dict) applied to every matrix multiplication. "
            + _AMP_NOTE
            + _PARTIALS_NOTE,
        ),
    )

    def _validate(self) -> None:
        _check_partials(self, "poplar_options")


class _NormsExperimentalConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "distributed_batch_norm_replica_group_size",
            1,
            "Number of replicas whose batch statistics are all-reduced together by training "
            "batch norms (groups of consecutive replicas). 1 keeps statistics per replica. Not "
            "for models pipelined over several IPUs, and not supported with I/O tiles.",
        ),
    )

    def _validate(self) -> None:
        size = self.distributed_batch_norm_replica_group_size
        if size < 1:
            raise ConfigurationError(
                f"{self._full_name('distributed_batch_norm_replica_group_size')} = {size}, but "
                "a group holds at least one replica. Use 1 for per-replica statistics."
            )


class _NormConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "use_stable_statistics",
            False,
            "Compute the variance from activations minus the mean (more stable, slower).",
        ),
        Category(
            "experimental",
            _NormsExperimentalConfig,
            "Experimental normalisation options that may change without notice.",
        ),
    )


_FAST_MATH_MOVED = (
    "it has moved to 'optimizations.math.fast'; set that instead. This location will be "
    "removed in a future release."
)


class _OptimizationConfig(_ConfigBase):
    _FIELDS = (
        Category(
            "math",
            _IpuAlgebraicSimplifierConfig,
            "Options of the algebraic simplifier.",
        ),
        Option(
            "prefetch_data_streams",
            True,
            "Overlap the host's prefetch of the next data-stream elements with execution.",
        ),
        Option(
            "combine_embedding_lookups",
            False,
            "Fuse embedding lookups on the same tensor (may be faster, uses more memory).",
        ),
        Option(
            "combine_matmuls",
            False,
            "Fuse matmuls that share the same weights or the same input.",
        ),
        Option(
            "enable_graph_outlining",
            True,
            "Reuse one piece of code for identical operations on different inputs (less code, "
            "more exchange). Turn off to favour speed over memory.",
        ),
        Option(
            "merge_infeed_io_copies",
            True,
            "Merge the host-to-device copies of the infeed into one larger copy (fewer "
            "transfers, more live memory).",
        ),
        Option(
            "maximum_cross_replica_sum_buffer_size",
            0,
            "Bytes of cross-replica sums that may wait to be merged before one is scheduled; 0 "
            "schedules each at once. Larger values mean fewer, bigger all-reduces.",
        ),
        Option(
            "maximum_reduce_scatter_buffer_size",
            0,
            "Bytes of reduce-scatters that may wait before one is scheduled.",
        ),
        Option(
            "maximum_inter_ipu_copies_buffer_size",
            0,
            "Bytes of inter-IPU copies that may wait before one is scheduled.",
        ),
        Option(
            "maximum_send_recv_cluster_size",
            0,
            "Bytes of host send/receive instructions that may wait before a cluster is scheduled.",
        ),
        Option(
            "maximum_reduce_many_buffer_size",
            0,
            "Maximum bytes in a cluster of reductions before it is scheduled.",
        ),
        Option(
            "maximum_all_gather_buffer_size",
            0,
            "Maximum bytes in a cluster of all-gathers before it is scheduled.",
        ),
        Option(
            "minimum_remote_tensor_size",
            128,
            "Tensors smaller than this many bytes are never placed in remote memory.",
        ),
        Option(
            "merge_remote_buffers",
            MergeRemoteBuffersBehaviour.IF_BENEFICIAL,
            "Whether compatible remote buffers are merged; a MergeRemoteBuffersBehaviour.",
        ),
        Option(
            "enable_gather_simplifier",
            True,
            "Optimise embedding lookups (gathers) more aggressively.",
        ),
        Option(
            "triangular_solve_expander_block_size",
            0,
            "Block size of the triangular-solve expander; 0 lets the compiler choose.",
        ),
        Option(
            "cholesky_block_size",
            0,
            "Block size of the Cholesky factoriser; 0 lets the compiler choose.",
        ),
        Option(
            "enable_fast_math",
            False,
            "Deprecated alias of `optimizations.math.fast`.",
            deprecated_msg=_FAST_MATH_MOVED,
        ),
        Option(
            "enable_dynamic_slice_replacement",
            True,
            "Replace dynamic slices and updates with multi-slices and updates, which can be "
            "planned (more parallelism, better memory use).",
        ),
    )


class _PoolingConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "poplar_options",
            {},
            "PopLibs pooling options (a dict) applied to every pooling operation.",
        ),
    )


class _SchedulingConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "algorithm",
            SchedulingAlgorithm.CHOOSE_BEST,
            "Instruction scheduling algorithm, a SchedulingAlgorithm. CHOOSE_BEST (the "
            "default) tries several and keeps the lowest predicted liveness.",
        ),
        Option(
            "maximum_scheduler_lookahead_depth",
            5,
            "How far LOOK_AHEAD looks past each decision. The search grows quickly with it.",
        ),
        Option(
            "maximum_scheduler_search_space_size",
            64,
            "Upper bound on LOOK_AHEAD's search space, so that it finishes in reasonable time.",
        ),
    )
