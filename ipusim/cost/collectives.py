"""Cross-replica collectives over the system topology (pure functions, integer picoseconds).

A collective over R replicas runs on the IPUs that hold the same shard in every replica. Inside a
Pod (the IPUs joined by IPU-Links: an M2000, a POD16, a POD64) they form a ring over IPU-Links used
in both directions, so each of the ring's steps moves one chunk half each way. Across Pods the rings
are hierarchical: reduce-scatter inside each Pod, all-reduce of the scattered part across Pods over
the GW-Links, all-gather inside (graphcore's GCL runs "syncful" collectives over IPU-Links inside a
Pod and syncless ones over GW-Links between Pods). Every ring step pays the link latency plus the
sync across the hops it spans.

For ``n`` participants, ``S`` bytes per participant, one-direction bandwidth ``B`` and per-step
cost ``a`` (latency + sync):

- reduce-scatter(S, n) = (n − 1) · (a + ⌈S / (2 n B)⌉)
- all-gather(S, n)     = (n − 1) · (a + ⌈S / (2 n B)⌉)
- all-reduce(S, n)     = reduce-scatter + all-gather = 2 (n − 1) · (a + ⌈S / (2 n B)⌉)

Hierarchical all-reduce, C Pods with k participants each (n = C·k), GW-Link bandwidth B_gw per
Pod (one direction: the rate a Pod's cross-Pod collective reaches, ``gw_link.collective_bandwidth``,
at most its chassis' ports) shared by the k participants, per-step cost a_gw (``gw_link.latency``
plus the sync). A replica of s IPUs runs s such rings at once, one per shard position, and they
share the Pod's GW-Links too: the caller passes B_gw / s (``lowering/distribution.py``), so a Pod
moves its whole model's gradients across at B_gw however the model is split over IPUs:

- reduce-scatter = reduce-scatter_IPU-Link(S, k) + reduce-scatter_GW(S / k, C; B_gw / k, a_gw)
- all-reduce = 2 × reduce-scatter (the all-gather mirrors it), i.e.
  2 (k − 1)(a + ⌈S / (2kB)⌉) + 2 (C − 1)(a_gw + ⌈(S/k) / (2C · B_gw/k)⌉)

(the ⌈·⌉ are taken in picoseconds.)
"""

from __future__ import annotations

import math

from ipusim.cost.units import PS_PER_S


def _chunk_ps(num_bytes: float, participants: int, bandwidth_bytes_per_s: float) -> int:
    """Time to move one ring chunk, split over the ring's two directions."""
    return math.ceil(num_bytes * PS_PER_S / (2 * participants * bandwidth_bytes_per_s))


def ring_half(
    num_bytes: float, participants: int, bandwidth_bytes_per_s: float, step_ps: int
) -> int:
    """Reduce-scatter or all-gather on a bidirectional ring of ``participants``."""
    if participants <= 1 or num_bytes <= 0:
        return 0
    return (participants - 1) * (
        step_ps + _chunk_ps(num_bytes, participants, bandwidth_bytes_per_s)
    )


def hierarchical_half(
    num_bytes: float,
    chassis: int,
    per_chassis: int,
    ipu_link_bytes_per_s: float,
    ipu_link_step_ps: int,
    gw_bytes_per_s: float,
    gw_step_ps: int,
) -> int:
    """Reduce-scatter (equally, all-gather) over ``chassis`` × ``per_chassis`` participants:
    inside each chassis over IPU-Links, then across chassis over the GW-Links shared by the
    chassis' participants."""
    inside = ring_half(num_bytes, per_chassis, ipu_link_bytes_per_s, ipu_link_step_ps)
    if chassis <= 1:
        return inside
    return inside + ring_half(
        num_bytes / per_chassis, chassis, gw_bytes_per_s / per_chassis, gw_step_ps
    )


def replica_groups(replicas: int, shards: int, ipus_per_pod: int) -> tuple[int, int]:
    """(Pods spanned, participants per Pod) of the ring for one shard position.

    Replica r uses IPUs [r·shards, (r+1)·shards); shard j of every replica is on IPU r·shards + j.
    """
    pod_of = [(r * shards) // ipus_per_pod for r in range(replicas)]
    spanned = len(set(pod_of))
    return spanned, replicas // spanned
