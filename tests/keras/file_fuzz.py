"""Damage for the file fuzz tests: byte flips, truncations and edits of JSON fields and arrays.

Each function takes the file's bytes (or its decoded JSON / arrays) and a seeded
``numpy.random.Generator`` and returns a damaged copy, so every fuzz case is reproducible from
its seed.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import numpy as np

__all__ = ["edit_arrays", "edit_json", "flip_bytes", "npz_bytes", "read_npz_bytes", "truncate"]

#: Values a field is replaced with: wrong types, out-of-range and absurd sizes.
PALETTE: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    1,
    3,
    10**12,
    2**63,
    -(10**9),
    0.5,
    float("nan"),
    float("inf"),
    "",
    "x",
    "float16",
    "int64",
    [],
    [1, 2],
    {},
    {"class_name": "Dense", "config": {}},
)


def flip_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` with 1-3 bytes XORed with a random non-zero value; half of the time one of them
    is in the first or last 100 bytes (zip's local and central headers)."""
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.5 and len(out) > 200:
            pos = (
                int(rng.integers(0, 100))
                if rng.random() < 0.5
                else len(out) - 1 - int(rng.integers(0, 100))
            )
        else:
            pos = int(rng.integers(0, len(out)))
        out[pos] ^= int(rng.integers(1, 256))
    return bytes(out)


def truncate(data: bytes, rng: np.random.Generator) -> bytes:
    """A prefix of ``data`` (possibly empty), cut anywhere."""
    return data[: int(rng.integers(0, len(data)))]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """The path (keys and indices) of every node of a JSON value."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def edit_json(value: Any, rng: np.random.Generator) -> tuple[Any, str]:
    """A copy of ``value`` with one node replaced from :data:`PALETTE`, deleted, or (a
    number) scaled; and a description of the edit."""
    edited = copy.deepcopy(value)
    paths = [p for p in _paths(edited) if p]
    path = paths[int(rng.integers(0, len(paths)))]
    parent = edited
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    old = parent[last]
    action = rng.random()
    if action < 0.15:
        del parent[last]
        return edited, f"deleted {path}"
    if action < 0.35 and isinstance(old, int | float) and not isinstance(old, bool):
        new = old * int(rng.choice([-1, 2, 1000, 10**9]))
    else:
        new = PALETTE[int(rng.integers(0, len(PALETTE)))]
    parent[last] = new
    return edited, f"{path}: {old!r} -> {new!r}"


def edit_arrays(
    arrays: dict[str, np.ndarray], rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], str]:
    """A copy of ``arrays`` with one array removed, reshaped, retyped, emptied or added."""
    edited = dict(arrays)
    key = sorted(edited)[int(rng.integers(0, len(edited)))]
    array = edited[key]
    action = int(rng.integers(0, 5))
    if action == 0:
        del edited[key]
        return edited, f"removed {key}"
    if action == 1:
        edited[key] = array.reshape(-1)[: max(array.size - 1, 0)]
        return edited, f"{key} shortened"
    if action == 2:
        edited[key] = array.astype(np.float64 if array.dtype != np.float64 else np.int32)
        return edited, f"{key} retyped"
    if action == 3:
        edited[key] = np.zeros((2, *array.shape), array.dtype)
        return edited, f"{key} given a new axis"
    edited[f"extra{len(edited)}"] = np.ones(3, np.float32)
    return edited, "an extra array"


def read_npz_bytes(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
        return {k: loaded[k] for k in loaded.files}


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()
