"""Helpers the planner's tests share."""

from __future__ import annotations

from typing import Any


def pick(cands: list[Any], **want: Any) -> Any:
    """The first candidate whose arguments hold every value of ``want``."""
    for c in cands:
        if all(c.args.get(k) == v for k, v in want.items()):
            return c
    raise AssertionError(f"no candidate with {want}")
