"""Where a BERT pipeline stage may start: at an encoder layer, or (a sub-layer split, as
Graphcore's MLPerf BERT ``att_ffn_placement`` does) between a layer's attention half and its
feed-forward half.

A :class:`Units` is the encoder as a sequence of units, each with its share of a layer's
seconds, variables and stashed activations, so a stage's figures are the layer's figures times
the shares of the units it holds. Whole layers have shares of one. The halves' shares of a
layer's seconds (forward and backward) and variable bytes are the profile's
(:class:`~ipusim.plan.bert_costs.BertCosts`: the reference run's compute sets and memory items
of each half's Keras layers); their shares of the stash come from the model's shape (E: a
profile tells an IPU's live activations, not a half's; the attention half stashes
``6 s h + 2 heads s^2`` elements per sequence and the feed-forward half ``2 s h + 2 s i``), as
do the others when no profile is given (E: ``8 h^2 + 4 s h`` and ``4 h i`` multiply-adds per
token, ``4 h^2`` and ``2 h i`` weights).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from ipusim.plan.bert_costs import BertCosts, BertShape

__all__ = ["Units", "halves", "whole_layers"]


@dataclass(frozen=True)
class Units:
    """The encoder as units: ``per_layer`` units a layer, each with its share of a layer's
    seconds (``time``), backward seconds (``back``), variable bytes (``var``) and stash
    (``act``), by position in the layer."""

    layers: int
    per_layer: int
    time: tuple[float, ...]
    var: tuple[float, ...]
    act: tuple[float, ...]
    back: tuple[float, ...]

    @property
    def count(self) -> int:
        """Units in the encoder."""
        return self.layers * self.per_layer

    def share(self, kind: str, first: int, stop: int) -> float:
        """Layers' worth of ``kind`` (``"time"``, ``"back"``, ``"var"`` or ``"act"``) in units
        ``first .. stop - 1``."""
        cumulative = self._cumulative[kind]
        return cumulative[stop] - cumulative[first]

    @functools.cached_property
    def _cumulative(self) -> dict[str, list[float]]:
        """Per kind, the shares of units ``0 .. u - 1`` for every ``u`` (a partition search
        asks for millions of spans)."""
        out = {}
        for kind in ("time", "back", "var", "act"):
            shares: tuple[float, ...] = getattr(self, kind)
            units = (shares[u % self.per_layer] for u in range(self.count))
            out[kind] = list(itertools.accumulate(units, initial=0.0))
        return out

    def is_sub_layer(self, bounds: tuple[int, ...]) -> bool:
        """Whether a split's boundaries fall inside a layer somewhere."""
        return any(b % self.per_layer for b in bounds)

    def placement(self, bounds: tuple[int, ...]) -> tuple[list[int], list[int] | None]:
        """The workload's ``layers-per-ipu`` and ``ffn-per-ipu`` of a split (None: whole
        layers; with halves, ``layers-per-ipu`` counts attention halves)."""
        spans = list(zip(bounds, bounds[1:]))
        if self.per_layer == 1:
            return [b - a for a, b in spans], None
        attention = [sum(1 for u in range(a, b) if u % 2 == 0) for a, b in spans]
        return attention, [b - a - n for (a, b), n in zip(spans, attention)]


def whole_layers(shape: BertShape) -> Units:
    """Stages start at encoder layers."""
    return Units(shape.layers, 1, (1.0,), (1.0,), (1.0,), (1.0,))


def halves(shape: BertShape, costs: BertCosts | None = None) -> Units:
    """Stages start at encoder layers or between a layer's attention and feed-forward halves;
    the halves' shares of seconds and variables from ``costs`` (its profile), else analytic."""
    h, i, s = shape.hidden, shape.intermediate, shape.sequence
    act = _pair(6 * s * h + 2 * shape.heads * s * s, 2 * s * h + 2 * s * i)
    if costs is None:
        time = _pair(8 * h * h + 4 * s * h, 4 * h * i)
        return Units(shape.layers, 2, time, _pair(4 * h * h, 2 * h * i), act, time)
    time = (costs.attention_s, 1.0 - costs.attention_s)
    back = (costs.attention_b, 1.0 - costs.attention_b)
    var = (costs.attention_var, 1.0 - costs.attention_var)
    return Units(shape.layers, 2, time, var, act, back)


def _pair(attention: float, feed_forward: float) -> tuple[float, float]:
    total = attention + feed_forward
    return attention / total, feed_forward / total
