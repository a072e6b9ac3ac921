"""Reverse-mode automatic differentiation that adds the backward pass to the graph as nodes.

Gradient rules are written with the same op functions as the forward pass, so the backward pass has
specs, costs and kernels like any other part of the program. Every backward node carries the layer
invocation of the forward node it differentiates and the phase ``"bwd"``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ipusim.errors import ConfigurationError
from ipusim.graph.graph import Symbol
from ipusim.graph.op import NotDifferentiableError
from ipusim.graph.spec import FLOAT_DTYPES


def gradients(
    target: Symbol, sources: Sequence[Symbol], seed: Symbol | None = None
) -> list[Symbol | None]:
    """d(target)/d(source) for each source, as new nodes of ``target.graph``.

    Args:
        target: a scalar (or, with ``seed``, any) float symbol.
        sources: symbols to differentiate with respect to (e.g. variable reads).
        seed: the gradient flowing into ``target``; default: ones (``target`` must be a scalar).

    Returns:
        One symbol per source, or None where the target does not depend on it.
    """
    from ipusim.graph.ops import math as m

    graph = target.graph
    if seed is None:
        if target.shape != ():
            raise ConfigurationError(
                f"gradients() needs a scalar target or an explicit seed; target has shape "
                f"{target.shape}"
            )
        with graph.phase("bwd"):
            seed = graph.constant(1.0, dtype=target.dtype)
    source_ids = {s.node.id for s in sources}
    # Nodes on a path from a source to the target.
    depends_on_source: set[int] = set()
    for node in graph.nodes:
        if node.id in source_ids or any(s.node.id in depends_on_source for s in node.inputs):
            depends_on_source.add(node.id)
    on_path = {n.id for n in graph.nodes_between([target])} & depends_on_source

    pending: dict[tuple[int, int], list[Symbol]] = {(target.node.id, target.index): [seed]}

    def total(key: tuple[int, int]) -> Symbol | None:
        parts = pending.get(key)
        if not parts:
            return None
        acc = parts[0]
        for part in parts[1:]:
            acc = m.add(acc, part)
        pending[key] = [acc]
        return acc

    for node in reversed(graph.nodes[: target.node.id + 1]):
        if node.id not in on_path or not node.inputs:
            continue
        with graph.tag(layer=node.layer, invocation=node.invocation, phase="bwd"):
            dys = [total((node.id, i)) for i in range(len(node.outputs))]
            if all(d is None for d in dys):
                continue
            try:
                dxs = node.op.gradient(node, *dys)
            except NotDifferentiableError as exc:
                raise NotDifferentiableError(f"{exc} (node {node.name})") from None
        if len(dxs) != len(node.inputs):
            raise RuntimeError(
                f"gradient rule of {node.op.name!r} returned {len(dxs)} gradients for "
                f"{len(node.inputs)} inputs"
            )
        for sym, dx in zip(node.inputs, dxs):
            if dx is None or sym.node.id not in on_path:
                continue
            if sym.dtype not in FLOAT_DTYPES:
                continue
            if dx.shape != sym.shape and None not in sym.shape:
                raise RuntimeError(
                    f"gradient rule of {node.op.name!r} produced shape {dx.shape} for an input "
                    f"of shape {sym.shape} (node {node.name})"
                )
            pending.setdefault((sym.node.id, sym.index), []).append(dx)

    with graph.phase("bwd"):
        return [total((s.node.id, s.index)) for s in sources]
