"""The AMP planner's candidate partitions: every channel, kernel and conv-group split of a pass
over the tiles, each with the finest field splits that fit (see :mod:`ipusim.cost.amp`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ipusim.cost.amp_problem import ConvProblem, IntArray, cdiv

#: Field splits evaluated per channel/kernel split (E: the finest few; more changes no plan in
#: the ResNet-50 and BERT layers we checked).
_FIELD_CANDIDATES = 4


@lru_cache(maxsize=4096)
def split_counts(n: int) -> tuple[int, ...]:
    """Split counts of a dimension of size ``n`` that give distinct per-tile sizes."""
    seen: dict[int, int] = {}
    for k in range(1, n + 1):
        seen.setdefault(-(-n // k), k)
    return tuple(sorted(seen.values()))


@lru_cache(maxsize=8192)
def _field_options(batch: int, out_h: int, out_w: int) -> tuple[IntArray, ...]:
    """Every (batch, rows, columns) split of the field, with its product and positions per tile,
    sorted by positions per tile."""
    grids: tuple[IntArray, ...] = np.meshgrid(
        np.array(split_counts(batch)),
        np.array(split_counts(out_h)),
        np.array(split_counts(out_w)),
        indexing="ij",
    )
    bs, hs, ws = (grid.ravel() for grid in grids)
    positions = cdiv(batch, bs) * cdiv(out_h, hs) * cdiv(out_w, ws)
    product = bs * hs * ws
    order = np.lexsort((product, positions))
    return bs[order], hs[order], ws[order], product[order], positions[order]


def candidates(problem: ConvProblem, tiles: int, icg: int, ocg: int) -> dict[str, IntArray]:
    """Splits to evaluate: every channel/kernel/group split with the finest field splits (in the
    order conv groups, kernel rows, input and output channel groups, then field splits)."""
    fb, fh, fw, fprod, _ = _field_options(problem.batch, problem.out_h, problem.out_w)
    ks_all = split_counts(problem.kh) if problem.kh > 1 else (1,)
    splits = (split_counts(problem.groups), ks_all, split_counts(icg), split_counts(ocg))
    grids: tuple[IntArray, ...] = np.meshgrid(*(np.array(s) for s in splits), indexing="ij")
    gs, ks, ics, ocs = (grid.ravel() for grid in grids)
    used = gs * ks * ics * ocs
    keep = used <= tiles
    names = ("bs", "hs", "ws", "ks", "ics", "ocs", "gs")
    if not keep.any():
        return {name: np.zeros(0, dtype=np.int64) for name in names}
    lefts, inverse = np.unique(tiles // used[keep], return_inverse=True)
    # The finest field splits that fit the tiles each split leaves (the options come finest
    # first), padded with -1.
    fit = fprod[None, :] <= lefts[:, None]
    rank = np.cumsum(fit, axis=1)
    rows, cols = np.nonzero(fit & (rank <= _FIELD_CANDIDATES))
    fits = np.full((len(lefts), _FIELD_CANDIDATES), -1, dtype=np.int64)
    fits[rows, rank[rows, cols] - 1] = cols
    picked = fits[inverse.reshape(-1)]
    real = picked >= 0
    field = picked[real]
    others = np.stack([ks[keep], ics[keep], ocs[keep], gs[keep]], axis=1)
    others = np.repeat(others, real.sum(axis=1), axis=0)
    columns = (fb[field], fh[field], fw[field], *others.T)
    return {name: np.asarray(col, dtype=np.int64) for name, col in zip(names, columns)}


def per_tile(
    problem: ConvProblem, c: dict[str, IntArray], icg: int, ocg: int, groups: int
) -> dict[str, IntArray]:
    """Per-tile sizes of every candidate split ``c``: batch ``b``, output rows ``h`` and columns
    ``w``, kernel rows ``k``, input/output channel groups ``ig``/``og``, conv groups ``cg`` (of
    ``groups``), and the input rows and columns the tile reads."""
    bs, hs, ws, ks = c["bs"], c["hs"], c["ws"], c["ks"]
    h = cdiv(problem.out_h, hs)
    w = cdiv(problem.out_w, ws)
    k = cdiv(problem.kh, ks)
    return {
        "b": cdiv(problem.batch, bs),
        "h": h,
        "w": w,
        "k": k,
        "ig": cdiv(icg, c["ics"]),
        "og": cdiv(ocg, c["ocs"]),
        "cg": cdiv(groups, c["gs"]),
        "in_h": np.where(
            (hs == 1) & (ks == 1),
            problem.in_h,
            np.minimum((h - 1) * problem.stride + k, problem.in_h),
        ),
        "in_w": np.where(
            ws == 1, problem.in_w, np.minimum((w - 1) * problem.stride + problem.kw, problem.in_w)
        ),
    }
