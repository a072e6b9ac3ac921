"""``tf.linalg``: matrix products, transposes, diagonals, norms and ``einsum`` from ipusim's
custom-training-loop runtime (:mod:`ipusim.compat.runtime.ops_linalg`), looked up on first use.
Factorizations and solvers are not simulated (see :mod:`ipusim.compat.not_simulated_ops`).
"""

from ipusim.compat._alias import runtime_getattr

__getattr__ = runtime_getattr(
    __name__, ("ipusim.compat.runtime.namespaces:linalg",), ("matmul", "einsum", "norm")
)
