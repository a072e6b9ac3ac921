"""The ``tf``, ``tf.math``, ``tf.nn``, ``tf.linalg`` and ``tf.random`` names of the runtime's
extra op modules, each under exactly the namespaces TensorFlow exports it from (``tf.erf`` does
not exist, ``tf.math.erf`` does). ``ipusim.compat.tf`` and its submodules look names up here.
"""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any

from ipusim.compat.runtime import (
    ops_array,
    ops_debug,
    ops_linalg,
    ops_math,
    ops_misc,
    ops_nn_extra,
    ops_nn_more,
    ops_random,
)
from ipusim.data.dtypes import DType

_MODULES = (ops_math, ops_array, ops_linalg, ops_nn_extra, ops_misc, ops_nn_more, ops_debug)


def _namespace(names: str, modules: tuple[ModuleType, ...] = _MODULES) -> SimpleNamespace:
    values: dict[str, Any] = {}
    for name in names.split():
        holder = next(m for m in modules if hasattr(m, name))
        values[name] = getattr(holder, name)
    return SimpleNamespace(**values)


#: ``tf.X``.
top = _namespace(
    """acos acosh add_n argmin argsort asin asinh atan atan2 atanh boolean_mask broadcast_to
    clip_by_global_norm clip_by_norm clip_by_value cos cosh cumsum einsum eye fill floor gather
    gather_nd identity_n linspace logical_not meshgrid norm pad pow rank reduce_all reduce_any
    reduce_logsumexp reduce_prod repeat reverse roll round saturate_cast scalar_mul scatter_nd
    searchsorted sequence_mask shape shape_n sign sin sinh size slice sort split stack tan
    tensor_scatter_nd_add tensor_scatter_nd_update tensordot tile unique unstack where
    AggregationMethod Module Tensor TensorShape VariableAggregation VariableSynchronization
    broadcast_dynamic_shape broadcast_static_shape case cond constant_initializer ensure_shape
    executing_eagerly foldl foldr get_current_name_scope get_logger get_static_value group
    histogram_fixed_width histogram_fixed_width_bins inside_function is_tensor make_ndarray
    map_fn name_scope nest no_op ones_initializer parallel_stack print random_normal_initializer
    random_uniform_initializer realdiv scan switch_case tensor_scatter_nd_sub timestamp
    truncatediv truncatemod tuple unravel_index vectorized_map while_loop zeros_initializer
    TensorArray Assert assert_equal assert_greater assert_less assert_rank debugging dtypes
    guarantee_const init_scope numpy_function py_function recompute_grad reverse_sequence
    strided_slice version bitwise"""
)
# dtypes TensorFlow names by other spellings
top.half, top.double = DType("float16"), DType("float64")
top.int8, top.int16 = DType("int8"), DType("int16")


#: ``tf.math.X``.
math = _namespace(
    """accumulate_n acos acosh add_n argmin asin asinh atan atan2 atanh ceil cos cosh
    count_nonzero cumprod cumsum divide_no_nan erf erfc expm1 floor floordiv floormod in_top_k
    is_finite is_inf is_nan l2_normalize lgamma log1p log_sigmoid logical_not logical_xor mod
    multiply_no_nan polyval pow reciprocal reciprocal_no_nan reduce_all reduce_any
    reduce_euclidean_norm reduce_logsumexp reduce_prod reduce_std reduce_variance rint round
    rsqrt scalar_mul segment_mean segment_sum sign sin sinh softplus softsign squared_difference
    tan top_k unsorted_segment_mean unsorted_segment_sum xdivy xlog1py xlogy zero_fraction
    bincount confusion_matrix cumulative_logsumexp invert_permutation is_non_decreasing
    is_strictly_increasing unsorted_segment_sqrt_n segment_max segment_min segment_prod
    unsorted_segment_max unsorted_segment_min unsorted_segment_prod"""
)

#: ``tf.nn.X``.
nn = _namespace(
    """avg_pool avg_pool2d batch_normalization compute_average_loss conv1d conv2d
    conv2d_transpose crelu depthwise_conv2d dropout elu embedding_lookup gelu in_top_k l2_loss
    l2_normalize leaky_relu log_poisson_loss max_pool max_pool2d moments relu6 selu silu softplus
    softsign swish top_k weighted_cross_entropy_with_logits weighted_moments zero_fraction
    atrous_conv2d avg_pool1d avg_pool3d conv1d_transpose conv3d depth_to_space
    depthwise_conv2d_backprop_filter depthwise_conv2d_backprop_input
    local_response_normalization lrn max_pool1d max_pool3d normalize_moments
    scale_regularization_loss separable_conv2d space_to_depth sufficient_statistics
    conv3d_transpose conv_transpose convolution pool"""
)

#: ``tf.linalg.X``.
linalg = _namespace(
    """adjoint band_part cross diag diag_part einsum eye global_norm l2_normalize matmul
    matrix_transpose matvec norm set_diag tensordot trace normalize tensor_diag
    tensor_diag_part"""
)

#: ``tf.random.X``.
random = _namespace(
    """Algorithm Generator categorical create_rng_state get_global_generator normal
    set_global_generator shuffle stateless_categorical stateless_normal
    stateless_truncated_normal stateless_uniform truncated_normal uniform""",
    (ops_random,),
)

__all__ = ["linalg", "math", "nn", "random", "top"]
