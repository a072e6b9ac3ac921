"""Op nodes to BSP supersteps: cycles from the cost model, plus the traffic some ops wait for."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ipusim.cost.compute import PlannerOptions, superstep_cycles
from ipusim.cost.host_embedding import HOST_EMBEDDING_OPS, host_embedding_traffic
from ipusim.cost.units import cycles_to_ps
from ipusim.graph.graph import Node
from ipusim.graph.op import OpCost
from ipusim.graph.spec import TensorSpec
from ipusim.hardware.specs import IPUSpec, SystemSpec
from ipusim.lowering.distribution import Distribution
from ipusim.lowering.program import Superstep
from ipusim.lowering.tile_mapping import as_precision, bytes_at

#: Graph phase -> trace phase of its supersteps.
GRAPH_PHASE_TO_TRACE = {"fwd": "fwd", "loss": "fwd", "bwd": "bwd", "update": "fwd"}


def trace_phase(node: Node) -> str:
    """The trace phase of a node's superstep."""
    return GRAPH_PHASE_TO_TRACE.get(node.phase, "fwd")


def element_bytes(precision: str) -> int:
    """Bytes of one float element at ``precision``."""
    return 4 if precision == "fp32" else 2


def value_bytes(nodes: Sequence[Node], precision: str) -> dict[tuple[int, int], int]:
    """Bytes of every value the nodes make, at the run's precision."""
    return {(n.id, s.index): bytes_at(s.spec, precision) for n in nodes for s in n.outputs}


def superstep(
    label: tuple[str, str, str, str],
    cost: OpCost,
    in_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    attrs: dict[str, Any],
    ipu: IPUSpec,
    precision: str,
    planner: PlannerOptions | None = None,
) -> Superstep | None:
    """The superstep of one op on ``ipu`` labelled ``(name, layer, op, phase)``, or None when
    it does no work (a view)."""
    name, layer, op, phase = label
    cycles = superstep_cycles(op, cost, in_specs, out_specs, attrs, ipu, precision, planner)
    if cycles is None:
        return None
    clock = ipu.clock_hz
    return Superstep(
        name=name,
        layer=layer,
        op=op,
        phase=phase,
        compute_ps=cycles_to_ps(cycles.compute, clock),
        exchange_ps=cycles_to_ps(cycles.exchange, clock),
        sync_ps=cycles_to_ps(cycles.sync, clock),
        flops=cost.flops,
        exchange_bytes=cycles.exchange_bytes,
        tiles=cycles.tiles,
        compute_sets=cycles.compute_sets,
    )


def node_supersteps(
    nodes: Sequence[Node],
    system: SystemSpec,
    precision: str,
    planner: PlannerOptions | None,
    replicas: int,
    chip_of: Callable[[Node], IPUSpec] | None = None,
) -> dict[int, Superstep]:
    """node id -> its superstep, for the nodes that do work (host embeddings with the host
    traffic of ``replicas`` replicas), each costed on ``chip_of(node)`` (its IPU's chip as its
    compute graph sees it; default ``system.ipu``)."""
    by_node: dict[int, Superstep] = {}
    for node in nodes:
        ipu = chip_of(node) if chip_of is not None else system.ipu
        in_specs = [as_precision(s, precision) for s in node.in_specs]
        out_specs = [as_precision(s, precision) for s in node.out_specs]
        cost = node.op.cost(in_specs, out_specs, **node.attrs)
        label = (node.name, node.layer or "", node.op.name, trace_phase(node))
        s = superstep(label, cost, in_specs, out_specs, node.attrs, ipu, precision, planner)
        if s is not None:
            by_node[node.id] = s
    _add_host_embedding_traffic(by_node, nodes, system, replicas)
    return by_node


def add_norm_collectives(
    by_node: dict[int, Superstep], nodes: Sequence[Node], dist: Distribution, element: int
) -> dict[int, Superstep]:
    """Add distributed batch norm's statistics all-reduces to the training batch norms' supersteps
    in place; return the supersteps as they were (a recomputation that reuses the statistics).

    Bytes per all-reduce: the mean in the activations' type and the power in float (one
    multi-tensor all-reduce, or two with stable statistics), and the two float gradient sums of
    the backward pass (poplibs ``poplin/Norms.cpp``).
    """
    before: dict[int, Superstep] = {}
    for node in nodes:
        s = by_node.get(node.id)
        count = dist.norm_all_reduces(node.op.name)
        if s is None or count == 0:
            continue
        if node.op.name == "batch_norm" and not node.attrs.get("training", True):
            continue
        x = node.in_specs[1] if node.op.name == "batch_norm_grad" else node.in_specs[0]
        channels = x.shape[node.attrs.get("axis", -1)]
        if node.op.name == "batch_norm_grad":
            sizes = [2 * channels * 4]
        elif count == 2:
            sizes = [channels * element, channels * 4]
        else:
            sizes = [channels * (element + 4)]
        parts = [dist.group_all_reduce(size) for size in sizes]
        before[node.id] = s
        by_node[node.id] = replace(
            s,
            sync_ps=s.sync_ps + sum(latency for latency, _ in parts),
            exchange_ps=s.exchange_ps + sum(transfer for _, transfer in parts),
            exchange_bytes=s.exchange_bytes + sum(sizes),
        )
    return before


def _add_host_embedding_traffic(
    by_node: dict[int, Superstep], nodes: Sequence[Node], system: SystemSpec, replicas: int
) -> None:
    """Give each host embedding lookup / update the host round trip it waits for, in place.

    The rows stream in (or the scaled gradients out) by stream copies, Poplar's exchange
    programs, so the round trip is the superstep's exchange and its link bytes the exchange
    bytes (:mod:`ipusim.cost.host_embedding`); the op computes nothing on the tiles.
    """
    for node in nodes:
        if node.op.name not in HOST_EMBEDDING_OPS:
            continue
        rows = node.out_specs[0] if node.op.name == "host_embedding_lookup" else node.in_specs[0]
        count, width = (int(d or 0) for d in rows.shape)
        traffic = host_embedding_traffic(
            node.op.name, count, width, rows.itemsize, system.host, replicas
        )
        base = by_node.get(node.id)
        by_node[node.id] = Superstep(
            name=node.name,
            layer=node.layer or "",
            op=node.op.name,
            phase=trace_phase(node),
            compute_ps=0,
            exchange_ps=traffic.duration_ps,
            sync_ps=base.sync_ps if base is not None else 0,
            exchange_bytes=traffic.bytes,
        )


def recomputed(s: Superstep) -> Superstep:
    """A forward superstep run again in the backward pass."""
    return replace(s, name=f"recompute {s.name}", phase="fwd")


def in_order(nodes: Sequence[Node], by_node: Mapping[int, Superstep]) -> list[Superstep]:
    """The supersteps of ``nodes`` that do work, in order."""
    return [by_node[n.id] for n in nodes if n.id in by_node]
