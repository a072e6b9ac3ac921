"""TensorFlow op names ipusim deliberately does not simulate, with the reason and what to use
instead, in the format of ``ipusim.compat.not_simulated.NOT_SIMULATED`` (public name ->
``(reason, instead)``; a key ending in ``.*`` covers every name below it), which adds them.
Only names of ``tf``, ``tf.math``, ``tf.nn``, ``tf.linalg``, ``tf.random`` and
``tf.keras.backend`` are here.
"""

from __future__ import annotations

__all__ = ["NOT_SIMULATED_OPS"]

_FACTOR = (
    "matrix factorizations, decompositions and solvers are not ops of ipusim's graph (Poplar's "
    "poplin offers only Cholesky and triangular solves, which ipusim does not model yet)",
    "factorize on the host with NumPy (numpy.linalg) and feed the result, or reformulate with "
    "matmul / einsum",
)
_OPERATOR = (
    "LinearOperator classes are a structured-matrix library built on factorizations",
    "dense matrices with tf.linalg.matmul / einsum",
)
_SPECIAL = (
    "special functions with no IPU vertex in PopLibs' popops and no ipusim kernel",
    "compute them on the host with SciPy / NumPy (scipy.special) and feed the values",
)
_DYNAMIC = (
    "the output shape depends on the values, which an IPU program cannot have (its shapes are "
    "fixed when it is compiled)",
    "masks of a fixed shape (tf.where(cond, x, 0)), or NumPy on the host",
)
_SAMPLER = (
    "candidate samplers draw a data-dependent set of classes (sampled softmax on CPU / GPU)",
    "the full softmax cross-entropy (tf.nn.sparse_softmax_cross_entropy_with_logits)",
)
_CTC = (
    "CTC losses and decoders run dynamic-programming loops over ragged label sequences",
    "compute them on the host, outside the IPU program",
)
_TF1_GRAPH = (
    "TensorFlow 1 graph-mode construction (placeholders, sessions, symbolic gradients)",
    "tf.function with tf.GradientTape inside an IPUStrategy",
)
_GRADIENT_OVERRIDE = (
    "ipusim's gradients are the graph ops' own rules; user-defined gradient functions cannot be "
    "registered",
    "tf.stop_gradient to cut a path, or write the forward so that its gradient is the one wanted",
)
_COMPLEX = (
    "complex numbers have no IPU type (the IPU computes in float16 / float32 and integers)",
    "carry real and imaginary parts as two float tensors",
)
_RARE_NN = (
    "a rarely used tf.nn op that no IPU program we scanned uses and ipusim has no graph op for",
    "compose it from the simulated ops (tf.nn.conv2d, tf.nn.max_pool2d, tf.reshape, tf.pad...)",
)

#: public name -> (why it is not simulated, what to use instead).
NOT_SIMULATED_OPS: dict[str, tuple[str, str]] = {
    **{
        f"tf.linalg.{name}": _FACTOR
        for name in [
            "banded_triangular_solve",
            "cholesky",
            "cholesky_solve",
            "det",
            "eig",
            "eigh",
            "eigh_tridiagonal",
            "eigvals",
            "eigvalsh",
            "expm",
            "inv",
            "logdet",
            "logm",
            "lstsq",
            "lu",
            "lu_matrix_inverse",
            "lu_reconstruct",
            "lu_solve",
            "matrix_rank",
            "pinv",
            "qr",
            "slogdet",
            "solve",
            "sqrtm",
            "svd",
            "triangular_solve",
            "tridiagonal_matmul",
            "tridiagonal_solve",
        ]
    },
    **{f"tf.{name}": _FACTOR for name in ("eig", "eigvals", "matrix_square_root")},
    **{
        f"tf.linalg.{name}": _OPERATOR
        for name in [
            "LinearOperator",
            "LinearOperatorAdjoint",
            "LinearOperatorBlockDiag",
            "LinearOperatorBlockLowerTriangular",
            "LinearOperatorCirculant",
            "LinearOperatorCirculant2D",
            "LinearOperatorCirculant3D",
            "LinearOperatorComposition",
            "LinearOperatorDiag",
            "LinearOperatorFullMatrix",
            "LinearOperatorHouseholder",
            "LinearOperatorIdentity",
            "LinearOperatorInversion",
            "LinearOperatorKronecker",
            "LinearOperatorLowRankUpdate",
            "LinearOperatorLowerTriangular",
            "LinearOperatorPermutation",
            "LinearOperatorScaledIdentity",
            "LinearOperatorToeplitz",
            "LinearOperatorTridiag",
            "LinearOperatorZeros",
        ]
    },
    **{
        f"tf.math.{name}": _SPECIAL
        for name in [
            "bessel_i0",
            "bessel_i0e",
            "bessel_i1",
            "bessel_i1e",
            "betainc",
            "digamma",
            "erfcinv",
            "erfinv",
            "igamma",
            "igammac",
            "lbeta",
            "ndtri",
            "nextafter",
            "polygamma",
            "zeta",
            "sobol_sample",
        ]
    },
    "tf.math.special.*": _SPECIAL,
    **{f"tf.math.{name}": _COMPLEX for name in ("angle", "conj", "imag", "real")},
    **{f"tf.{name}": _COMPLEX for name in ("complex", "complex64", "complex128")},
    **{f"tf.{name}": _DYNAMIC for name in ("dynamic_partition", "unique_with_counts")},
    **{
        f"tf.nn.{name}": _SAMPLER
        for name in [
            "all_candidate_sampler",
            "fixed_unigram_candidate_sampler",
            "learned_unigram_candidate_sampler",
            "compute_accidental_hits",
            "nce_loss",
            "sampled_softmax_loss",
        ]
    },
    **{
        f"tf.random.{name}": _SAMPLER
        for name in [
            "all_candidate_sampler",
            "fixed_unigram_candidate_sampler",
            "learned_unigram_candidate_sampler",
            "log_uniform_candidate_sampler",
            "uniform_candidate_sampler",
        ]
    },
    **{
        f"tf.nn.{name}": _CTC
        for name in [
            "ctc_beam_search_decoder",
            "ctc_greedy_decoder",
            "ctc_loss",
            "ctc_unique_labels",
            "collapse_repeated",
        ]
    },
    **{
        f"tf.keras.backend.{name}": _CTC
        for name in ("ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse")
    },
    **{f"tf.keras.backend.{name}": _TF1_GRAPH for name in ("function", "gradients", "placeholder")},
    "tf.keras.backend.rnn": (
        "Keras' symbolic RNN loop helper",
        "the recurrent layers (keras.layers.LSTM / GRU / SimpleRNN)",
    ),
    **{f"tf.{name}": _TF1_GRAPH for name in ("gradients", "hessians", "import_graph_def")},
    **{
        f"tf.{name}": _GRADIENT_OVERRIDE
        for name in ("custom_gradient", "RegisterGradient", "no_gradient", "grad_pass_through")
    },
    **{
        f"tf.nn.{name}": (
            "sparse tensors do not exist on the IPU",
            "tf.nn.embedding_lookup on dense ids with a mask",
        )
        for name in ("embedding_lookup_sparse", "safe_embedding_lookup_sparse")
    },
    **{
        f"tf.nn.{name}": _RARE_NN
        for name in [
            "atrous_conv2d_transpose",
            "dilation2d",
            "erosion2d",
            "fractional_avg_pool",
            "fractional_max_pool",
            "isotonic_regression",
            "max_pool_with_argmax",
            "batch_norm_with_global_normalization",
        ]
    },
    **{
        f"tf.nn.{name}": (
            "TF1-style RNN cell wrappers",
            "keras.layers.LSTM / GRU with their dropout arguments",
        )
        for name in ("RNNCellDeviceWrapper", "RNNCellDropoutWrapper", "RNNCellResidualWrapper")
    },
    **{
        f"tf.random.{name}": (
            "gamma, Poisson and binomial samplers need rejection loops with value-dependent "
            "iteration counts; ipusim draws uniform, normal, truncated normal and categorical "
            "values only",
            "NumPy's generator on the host (numpy.random.default_rng().gamma / poisson)",
        )
        for name in [
            "gamma",
            "poisson",
            "stateless_binomial",
            "stateless_gamma",
            "stateless_poisson",
            "stateless_parameterized_truncated_normal",
        ]
    },
    **{
        f"tf.{name}": (
            "string, sparse, quantized and structure-spec types do not exist on the IPU",
            "dense float / int tensors (tf.TensorSpec describes them); strings on the host",
        )
        for name in [
            "IndexedSlices",
            "IndexedSlicesSpec",
            "OptionalSpec",
            "TensorArraySpec",
            "TypeSpec",
            "type_spec_from_value",
            "edit_distance",
            "fingerprint",
            "qint8",
            "qint16",
            "qint32",
            "quint8",
            "quint16",
            "resource",
            "variant",
            "lookup",
            "feature_column",
            "quantization",
        ]
    },
    **{
        f"tf.{name}": (
            "the IPU computes in float16 / float32 and 8 to 64-bit signed integers and uint8; "
            "ipusim's dtypes are those",
            "float16 (IPU half precision) or a signed integer type",
        )
        for name in ["bfloat16", "uint16", "uint32", "uint64", "bitcast"]
    },
    **{
        f"tf.{name}": (
            "a rarely used array op that no IPU program we scanned uses and ipusim has no "
            "graph op for",
            "compose it from tf.reshape / tf.transpose / tf.pad / tf.gather / tf.scatter_nd",
        )
        for name in [
            "batch_to_space",
            "space_to_batch",
            "space_to_batch_nd",
            "required_space_to_batch_paddings",
            "extract_volume_patches",
            "dynamic_stitch",
            "tensor_scatter_nd_max",
            "tensor_scatter_nd_min",
        ]
    },
    **{
        f"tf.nn.{name}": (
            "a rarely used array op that no IPU program we scanned uses and ipusim has no "
            "graph op for",
            "tf.nn.conv2d with dilations= (what space_to_batch implements atrous convolution with)",
        )
        for name in ["space_to_batch", "with_space_to_batch"]
    },
    **{
        f"tf.keras.backend.{name}": (
            "unshared-weight convolution helpers of Keras' backend",
            "keras.layers.LocallyConnected1D / LocallyConnected2D",
        )
        for name in ["local_conv1d", "local_conv2d"]
    },
    "tf.signal.*": (
        "FFTs and spectral ops: PopLibs has no FFT, so IPU programs do not run them on the IPU",
        "compute spectra on the host with numpy.fft in the input pipeline",
    ),
    "tf.sets.*": _DYNAMIC,
    "tf.io.*": (
        "file I/O and record / image decoding run on the host, not in the IPU program",
        "Python / NumPy file reading in the input pipeline (tf.data.Dataset.from_tensor_slices)",
    ),
    "tf.queue.*": (
        "TF1 input queues",
        "tf.data with ipu.ipu_infeed_queue.IPUInfeedQueue",
    ),
    "tf.graph_util.*": _TF1_GRAPH,
    "tf.autodiff.*": (
        "forward-mode autodiff (ForwardAccumulator); ipusim differentiates in reverse mode",
        "tf.GradientTape",
    ),
    **{
        f"tf.{name}": (
            "custom C++ kernels and TensorFlow graph plumbing do not exist in ipusim",
            "the simulated tf ops; IPU custom ops (ipu.custom_ops) are not simulated either",
        )
        for name in [
            "load_library",
            "load_op_library",
            "make_tensor_proto",
            "register_tensor_conversion_function",
            "nondifferentiable_batch_function",
            "variable_creator_scope",
            "CriticalSection",
        ]
    },
}
