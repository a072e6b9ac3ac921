"""Tile mapping: spread tensors over an IPU's tiles and add up the bytes each tile holds."""

from __future__ import annotations

import numpy as np

from ipusim._jit import kernel


@kernel
def _spread(sizes, grain, tiles, out):
    # Tensor i covers ceil(size / grain) grains, at most `tiles` tiles, starting where the previous
    # tensor ended (round robin), so small tensors do not all pile onto tile 0.
    start = 0
    for i in range(sizes.shape[0]):
        size = sizes[i]
        if size <= 0:
            continue
        grains = (size + grain - 1) // grain
        used = min(tiles, grains)
        base = size // used
        extra = size - base * used
        for j in range(used):
            tile = (start + j) % tiles
            out[tile] += base + (1 if j < extra else 0)
        start = (start + used) % tiles


def spread_over_tiles(sizes_bytes: np.ndarray, tiles: int, grain_bytes: int) -> np.ndarray:
    """Bytes per tile after spreading each tensor of ``sizes_bytes`` over up to ``tiles`` tiles.

    Args:
        sizes_bytes: bytes of each tensor, in placement order.
        tiles: tiles of the IPU.
        grain_bytes: fewest bytes placed on one tile.

    Returns:
        int64 array of length ``tiles``; its sum equals ``sizes_bytes.sum()``.
    """
    if tiles <= 0 or grain_bytes <= 0:
        raise ValueError(f"tiles ({tiles}) and grain_bytes ({grain_bytes}) must be positive")
    out = np.zeros(tiles, dtype=np.int64)
    _spread(np.asarray(sizes_bytes, dtype=np.int64), np.int64(grain_bytes), np.int64(tiles), out)
    return out
