"""Integer lookups used by the preprocessing layers: ``bucketize`` (Discretization),
``table_lookup`` (IntegerLookup) and ``hash_bucket`` (Hashing). Their outputs are indices, so no
gradient flows through them.

Composition could express a lookup only as one comparison op per table entry; these are one op
each, a binary search per element (:mod:`ipusim.kernels.lookup`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, SupportsInt

import numpy as np

from ipusim.errors import ConfigurationError, InputDataError, InvalidTypeError
from ipusim.graph.execute import ExecContext
from ipusim.graph.graph import Symbol, TensorLike, apply1
from ipusim.graph.op import Op, OpCost, Specs, io_cost, no_gradient, register
from ipusim.graph.spec import Array, TensorSpec
from ipusim.kernels import hashing
from ipusim.kernels import lookup as k


def _search_cost(in_specs: Specs, out_specs: Specs, table: int) -> OpCost:
    # One compare and branch per step of the binary search: ceil(log2(table + 1)) steps. D
    steps = max(1, math.ceil(math.log2(table + 1)))
    return io_cost(steps * out_specs[0].size, in_specs, out_specs, "elementwise")


@register
class Bucketize(Op):
    """How many of ``boundaries`` (sorted ascending) are <= each element; int64."""

    name = "bucketize"
    kind = "elementwise"

    def infer(self, x: TensorSpec, *, boundaries: tuple[float, ...]) -> TensorSpec:
        if list(boundaries) != sorted(boundaries):
            raise ConfigurationError(f"bucketize: boundaries must be sorted, received {boundaries}")
        return TensorSpec(x.shape, "int64")

    def forward(self, ctx: ExecContext, x: Array, *, boundaries: tuple[float, ...]) -> Array:
        return k.bucketize(x, np.asarray(boundaries, np.float64))

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _search_cost(in_specs, out_specs, len(attrs["boundaries"]))


@register
class TableLookup(Op):
    """``values[i]`` where an element equals ``keys[i]`` (keys sorted ascending), else
    ``default`` (plus ``floormod(element, oov_buckets)`` when ``oov_buckets`` > 1); int64.
    With ``strict``, an element not in the table is an InputDataError (Keras' run-time check
    of IntegerLookup with no OOV index)."""

    name = "table_lookup"
    kind = "elementwise"

    def infer(
        self,
        x: TensorSpec,
        *,
        keys: tuple[int, ...],
        values: tuple[int, ...],
        default: int,
        oov_buckets: int = 0,
        strict: bool = False,
    ) -> TensorSpec:
        if x.dtype not in ("int8", "uint8", "int16", "int32", "int64"):
            raise InvalidTypeError(f"table_lookup: x must be an integer tensor, received {x.dtype}")
        if len(keys) != len(values) or list(keys) != sorted(set(keys)):
            raise ConfigurationError(
                "table_lookup: keys must be unique, sorted and as many as values"
            )
        return TensorSpec(x.shape, "int64")

    def forward(
        self,
        ctx: ExecContext,
        x: Array,
        *,
        keys: tuple[int, ...],
        values: tuple[int, ...],
        default: int,
        oov_buckets: int = 0,
        strict: bool = False,
    ) -> Array:
        table = np.asarray(keys, np.int64), np.asarray(values, np.int64)
        out = k.lookup(x, *table, default, oov_buckets)
        absent = ~np.isin(x, np.asarray(keys, dtype=np.int64)) if strict else None
        if absent is not None and absent.any():
            missing = sorted({int(v) for v in np.asarray(x)[absent]})[:10]
            raise InputDataError(
                f"When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                f"{missing}; consider setting `num_oov_indices=1`"
            )
        return out

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: Any) -> OpCost:
        return _search_cost(in_specs, out_specs, len(attrs["keys"]))


#: FLOPs per element of ``hash_bucket``: the decimal conversion (up to 20 divisions by 10) and
#: FarmHash's short-input mix (about 20 64-bit multiplies, shifts and xors) and one modulo. E
HASH_FLOPS_PER_ELEMENT = 48


@register
class HashBucket(Op):
    """``Fingerprint64(str(x)) % num_bins`` per integer element (``to_hash_bucket_fast`` of
    ``as_string``, what Keras' Hashing computes for integers); int64."""

    name = "hash_bucket"
    kind = "elementwise"

    def infer(self, x: TensorSpec, *, num_bins: int) -> TensorSpec:
        if x.dtype not in ("int8", "uint8", "int16", "int32", "int64"):
            raise InvalidTypeError(f"hash_bucket: x must be an integer tensor, received {x.dtype}")
        if num_bins < 1:
            raise ConfigurationError(f"hash_bucket: num_bins must be >= 1, received {num_bins}")
        return TensorSpec(x.shape, "int64")

    def forward(self, ctx: ExecContext, x: Array, *, num_bins: int) -> Array:
        return hashing.hash_ints(x, num_bins)

    gradient = no_gradient

    def cost(self, in_specs: Specs, out_specs: Specs, **attrs: object) -> OpCost:
        flops = HASH_FLOPS_PER_ELEMENT * out_specs[0].size
        return io_cost(flops, in_specs, out_specs, "elementwise")


def hash_bucket(x: TensorLike, num_bins: int) -> Symbol:
    """Bucket of each integer by TensorFlow's fast string hash of its decimal text."""
    return apply1("hash_bucket", x, num_bins=int(num_bins))


def bucketize(x: TensorLike, boundaries: Iterable[float]) -> Symbol:
    """Bucket index of each element for sorted ``boundaries`` (``tf.raw_ops.Bucketize``)."""
    return apply1("bucketize", x, boundaries=tuple(float(b) for b in boundaries))


def table_lookup(
    x: TensorLike,
    keys: Iterable[SupportsInt],
    values: Iterable[SupportsInt],
    default: int,
    oov_buckets: int = 0,
    strict: bool = False,
) -> Symbol:
    """Map integer keys to integer values; keys not in the table map to ``default`` (spread over
    ``oov_buckets`` buckets by ``floormod`` when more than 1; an error with ``strict``)."""
    pairs = sorted(zip((int(k) for k in keys), (int(v) for v in values), strict=True))
    return apply1(
        "table_lookup",
        x,
        keys=tuple(p[0] for p in pairs),
        values=tuple(p[1] for p in pairs),
        default=int(default),
        oov_buckets=int(oov_buckets),
        strict=bool(strict),
    )
