"""Replication and Streaming Memory: collectives and remote transfers added to a program.

Replicas are identical and run in lock step, so lowering builds replica 0's program and adds, at
each weight update, the collective that combines the replicas' gradients (timed by
``ipusim.cost.collectives`` over the system's topology), and the Streaming Memory traffic of
whatever is offloaded:

- optimizer state (``offload_weight_update_variables``): loaded before and stored after the
  update; with ``replicated_optimizer_state_sharding`` each replica holds 1/R of it, the
  all-reduce becomes a reduce-scatter before the update and an all-gather of the updated weights
  after it;
- activations (``offload_activations``, pipelines): each micro-batch's stash is stored after the
  forward pass and loaded before the backward pass, so only one micro-batch's stash stays on chip;
- gradient-accumulation buffers (``offload_gradient_accumulation_buffers``): loaded and stored
  around every accumulation;
- weights (``replicated_weight_sharding`` / ``offload_weights``): each replica stores its 1/R
  share after the update and loads it back, followed by an all-gather.

Distributed batch norm (``norms.experimental.distributed_batch_norm_replica_group_size`` = G > 1)
adds small collectives inside the steps: every training batch norm all-reduces its statistics over
its group of G consecutive replicas (GCL ``CommGroupType::CONSECUTIVE``, graphcore/tensorflow
``popnn/norm.cc``), once in the forward pass (twice with ``norms.use_stable_statistics``: the
mean, then the power of the mean-free activations, poplibs ``poplin/Norms.cpp``) and once in the
backward pass (the two gradient sums in one multi-tensor all-reduce). Recomputing the layer
all-reduces again, except under RecomputeAndBackpropagateInterleaved (IPU TensorFlow's
``_NormsExperimentalConfig`` docstring).

Streaming Memory bandwidth per IPU is the lesser of the IPU's own figure and its fair share of the
chassis gateway (every IPU of the chassis moves data at the same time, by symmetry).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ipusim.cost import collectives as col
from ipusim.cost.units import cycles_to_ps, seconds_to_ps, transfer_ps
from ipusim.errors import (
    ConfigurationError,
    PipelineConfigurationError,
    StreamingMemoryUnavailableError,
)
from ipusim.graph.graph import Node
from ipusim.graph.spec import TensorSpec
from ipusim.hardware.specs import StreamingMemorySpec, SystemSpec
from ipusim.lowering.program import Timed

if TYPE_CHECKING:
    from ipusim.graph.variable import Variable


@dataclass(frozen=True)
class DistributionSpec:
    """Replication and offloading choices of one program.

    Attributes:
        replicas: number of replicas (1 = no replication).
        offload_optimizer_state: keep optimizer state in Streaming Memory. None = the default
            (on for pipelines and gradient accumulation when remote buffers are available).
        replicated_optimizer_state_sharding: shard optimizer state (and its traffic) over replicas.
        offload_activations: keep pipeline stashes in Streaming Memory.
        offload_gradient_accumulation_buffers: keep accumulators in Streaming Memory.
        replicated_weight_sharding: shard weights over replicas in Streaming Memory.
        remote_buffers: whether the device supports remote buffers at all.
        batch_norm_group: ``norms.experimental.distributed_batch_norm_replica_group_size``:
            consecutive replicas whose training batch norms share statistics (1 = per replica).
        stable_norm_statistics: ``norms.use_stable_statistics`` (the forward pass all-reduces
            the mean and the power separately).
    """

    replicas: int = 1
    offload_optimizer_state: bool | None = None
    replicated_optimizer_state_sharding: bool = False
    offload_activations: bool = False
    offload_gradient_accumulation_buffers: bool = False
    replicated_weight_sharding: bool = False
    remote_buffers: bool = True
    batch_norm_group: int = 1
    stable_norm_statistics: bool = False


def check_norm_group(group: int, replicas: int) -> None:
    """Raise ConfigurationError unless distributed batch norm's ``group`` divides ``replicas``."""
    if group > 1 and replicas % group:
        raise ConfigurationError(
            f"norms.experimental.distributed_batch_norm_replica_group_size = {group} does "
            f"not divide the replication factor ({replicas}): batch norm statistics are "
            "shared by groups of that many consecutive replicas. Use a divisor of "
            f"{replicas} (1 keeps statistics per replica)."
        )


def check_norm_group_pipeline(
    group: int, device_mapping: Sequence[int], nodes: Sequence[Node]
) -> None:
    """Raise unless distributed batch norm stays out of a pipeline over several IPUs.

    IPU TensorFlow documents the option as not for model parallelism (pipelining) across
    several IPUs (``set_norm_options`` in ipu/utils.py); a pipeline on one IPU may use it.

    Args:
        group: ``norms.experimental.distributed_batch_norm_replica_group_size``.
        device_mapping: the IPU of each pipeline stage.
        nodes: the nodes the pipeline runs.
    """
    ipus = sorted(set(device_mapping))
    norms = [n for n in nodes if n.op.name == "batch_norm" and n.attrs.get("training", True)]
    layers = [n.layer or n.name for n in norms]
    if group > 1 and len(ipus) > 1 and layers:
        raise PipelineConfigurationError(
            f"norms.experimental.distributed_batch_norm_replica_group_size = {group} shares "
            f"batch norm statistics across replicas, which is not for a model pipelined over "
            f"several IPUs (this pipeline uses IPUs {ipus}), but the training batch norm of "
            f"layer(s) {sorted(set(layers))} runs in it. Set the option to 1 (statistics per "
            "replica), or map every pipeline stage to one IPU (device_mapping=[0, 0, ...])."
        )


def all_reduce_bytes(
    reductions: Sequence[Node],
    variables: Sequence[Variable],
    nbytes: Callable[[TensorSpec], int],
) -> int:
    """Bytes per replica the gradient all-reduce before the update of ``variables`` (one
    IPU's) moves: ``nbytes`` of each of their gradients that the step's ``cross_replica_mean``
    nodes (``reductions``) reduce, once per variable."""
    grads: dict[int, TensorSpec] = {}
    for node in reductions:
        for variable, grad in zip(node.attrs["variables"], node.inputs, strict=True):
            grads.setdefault(id(variable), grad.spec)
    return sum(nbytes(grads[id(v)]) for v in variables if id(v) in grads)


@dataclass(frozen=True)
class Distribution:
    """The resolved choices and the topology they run on, for one program."""

    spec: DistributionSpec
    system: SystemSpec
    ipus_per_replica: int
    offload_optimizer_state: bool
    shard_optimizer_state: bool

    @classmethod
    def resolve(
        cls,
        spec: DistributionSpec,
        system: SystemSpec,
        ipus_per_replica: int,
        accumulating: bool,
        pipelined: bool,
    ) -> Distribution:
        """Apply the defaults and check the system can do what is asked."""
        has_memory = system.streaming_memory is not None and spec.remote_buffers
        explicit = {
            "offload_weight_update_variables": spec.offload_optimizer_state is True,
            "offload_activations": spec.offload_activations,
            "offload_gradient_accumulation_buffers": spec.offload_gradient_accumulation_buffers,
            "replicated_weight_sharding": spec.replicated_weight_sharding,
        }
        asked = [name for name, on in explicit.items() if on]
        if asked and not has_memory:
            why = (
                "has no Streaming Memory"
                if system.streaming_memory is None
                else "has remote buffers disabled (device_connection.enable_remote_buffers)"
            )
            raise StreamingMemoryUnavailableError(
                f"{', '.join(asked)} needs Streaming Memory, but system {system.name!r} {why}. "
                "Turn the option off, or simulate a system with Streaming Memory (e.g. M2000)."
            )
        offload = spec.offload_optimizer_state
        if offload is None:
            offload = (pipelined or accumulating) and has_memory
            if (pipelined or accumulating) and system.streaming_memory is None:
                warnings.warn(
                    f"system {system.name!r} has no Streaming Memory: optimizer state stays on "
                    "chip (offloading it is the default for pipelines and gradient "
                    "accumulation where remote buffers exist)",
                    stacklevel=3,
                )
        check_norm_group(spec.batch_norm_group, spec.replicas)
        shard = spec.replicated_optimizer_state_sharding and spec.replicas > 1
        return cls(spec, system, ipus_per_replica, bool(offload), shard)

    # ------------------------------------------------------------------ pieces
    @property
    def replicas(self) -> int:
        return self.spec.replicas

    def _half(self, num_bytes: int, participants: int) -> tuple[int, int]:
        """(duration, latency and sync part) in picoseconds of a reduce-scatter (equally, an
        all-gather) of ``num_bytes`` per replica among the first ``participants`` consecutive
        replicas: a ring over IPU-Links, hierarchical across Pods."""
        chassis, per_chassis = col.replica_groups(
            participants, self.ipus_per_replica, self.system.ipus_per_pod
        )
        link_bw, link_step, gw_bw, gw_step = self._link_params()
        half = col.hierarchical_half(
            num_bytes, chassis, per_chassis, link_bw, link_step, gw_bw, gw_step
        )
        return half, (per_chassis - 1) * link_step + (chassis - 1) * gw_step

    def _link_params(self) -> tuple[float, int, float, int]:
        """(IPU-Link bandwidth per ring direction, IPU-Link ring step, GW bandwidth per Pod, GW
        ring step).

        Neighbouring replicas are ``ipus_per_replica`` IPUs apart, so each ring step spans that
        many hops, and the rings of the ``ipus_per_replica`` shard positions run at once over the
        same links, sharing them. They share a Pod's GW-Links too: every IPU of the Pod sends its
        share of the cross-Pod all-reduce at the same time, so a Pod moves the whole model's
        gradients over its GW-Links whatever the number of IPUs a replica spans.
        """
        system = self.system
        ipu, link, gw = system.ipu, system.ipu_link, system.gw_link
        stride = self.ipus_per_replica
        hops = system.ipu_link_hops(0, min(stride, system.ipus_per_pod - 1)) if stride > 1 else 1
        sync = cycles_to_ps(ipu.onchip_sync_cycles, ipu.clock_hz) + seconds_to_ps(
            hops * link.sync_per_hop_s
        )
        link_step = seconds_to_ps(link.latency_s) + sync
        link_bw = link.neighbour_bandwidth_bytes_per_s / stride
        if gw is None:
            return link_bw, link_step, link_bw, link_step
        chassis_per_pod = system.ipus_per_pod // system.ipus_per_chassis
        gw_step = seconds_to_ps(gw.latency_s) + sync
        line_rate = gw.bandwidth_bytes_per_s * gw.ports * chassis_per_pod
        gw_bw = min(gw.collective_bandwidth_bytes_per_s, line_rate) / stride
        return link_bw, link_step, gw_bw, gw_step

    def collective(self, kind: str, num_bytes: int, what: str) -> Timed | None:
        """A reduce-scatter, all-gather or all-reduce of ``num_bytes`` per replica."""
        if self.replicas <= 1 or num_bytes <= 0:
            return None
        half, _ = self._half(num_bytes, self.replicas)
        duration = 2 * half if kind == "all-reduce" else half
        return Timed(f"{kind} {what}", "link", duration, num_bytes)

    def norm_all_reduces(self, op: str) -> int:
        """All-reduces one execution of ``op`` makes under distributed batch norm (0 without)."""
        if self.spec.batch_norm_group <= 1:
            return 0
        if op == "batch_norm":
            return 2 if self.spec.stable_norm_statistics else 1
        return 1 if op == "batch_norm_grad" else 0

    def group_all_reduce(self, num_bytes: int) -> tuple[int, int]:
        """(link-latency and sync part, transfer part) in picoseconds of one all-reduce of
        ``num_bytes`` per replica inside one distributed-batch-norm group of consecutive
        replicas (a ring over IPU-Links, hierarchical if the group spans Pods)."""
        group = self.spec.batch_norm_group
        if group <= 1 or num_bytes <= 0:
            return 0, 0
        half, steps = self._half(num_bytes, group)
        latency = min(2 * half, 2 * steps)
        return latency, 2 * half - latency

    def _memory(self) -> StreamingMemorySpec:
        memory = self.system.streaming_memory
        assert memory is not None  # resolve() refuses to offload without Streaming Memory
        return memory

    def remote_bandwidth(self) -> float:
        memory = self._memory()
        active = min(self.system.ipus_per_chassis, self.replicas * self.ipus_per_replica)
        return min(
            memory.bandwidth_bytes_per_s_per_ipu,
            memory.shared_gateway_bandwidth_bytes_per_s / max(active, 1),
        )

    def remote(self, name: str, num_bytes: int, phase: str = "weight-update") -> Timed | None:
        """A load from or store to Streaming Memory of ``num_bytes``."""
        if num_bytes <= 0:
            return None
        duration = transfer_ps(num_bytes, self.remote_bandwidth(), self._memory().latency_s)
        return Timed(name, "remote", duration, num_bytes, phase)

    # ------------------------------------------------------------------ the weight update
    def update_instructions(
        self, grad_bytes: int, state_bytes: int, weight_bytes: int
    ) -> tuple[tuple[Timed, ...], tuple[Timed, ...]]:
        """What runs before and after the optimizer step of one IPU's variables.

        Args:
            grad_bytes: bytes of the gradients to combine across replicas.
            state_bytes: bytes of the optimizer state of these variables (unsharded).
            weight_bytes: bytes of the variables.
        """
        before: list[Timed | None] = []
        after: list[Timed | None] = []
        r = self.replicas
        if self.shard_optimizer_state:
            before.append(self.collective("reduce-scatter", grad_bytes, "gradients"))
            state = -(-state_bytes // r)
        else:
            before.append(self.collective("all-reduce", grad_bytes, "gradients"))
            state = state_bytes
        if self.offload_optimizer_state:
            before.append(self.remote("load optimizer state", state))
            after.append(self.remote("store optimizer state", state))
        if self.shard_optimizer_state:
            after.append(self.collective("all-gather", weight_bytes, "weights"))
        if self.spec.replicated_weight_sharding:
            share = -(-weight_bytes // r)
            after.append(self.remote("store weight shard", share))
            after.append(self.remote("load weight shard", share))
            after.append(self.collective("all-gather", weight_bytes, "weight shards"))
        return (tuple(t for t in before if t is not None), tuple(t for t in after if t is not None))

    def on_chip_optimizer_state(self, state_bytes: int) -> int:
        """Optimizer-state bytes that stay in SRAM."""
        if self.offload_optimizer_state:
            return 0
        return -(-state_bytes // self.replicas) if self.shard_optimizer_state else state_bytes
