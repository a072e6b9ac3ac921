"""The ``tf``, ``tf.math``, ``tf.nn``, ``tf.linalg`` and ``tf.random`` names of the runtime's
extra op modules, each under exactly the namespaces TensorFlow exports it from (``tf.erf`` does
not exist, ``tf.math.erf`` does). ``ipusim.compat.tf`` and its submodules look names up here.
"""

from __future__ import annotations

from types import SimpleNamespace

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


def _namespace(names: str, modules: tuple = _MODULES) -> SimpleNamespace:
    values = {}
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

