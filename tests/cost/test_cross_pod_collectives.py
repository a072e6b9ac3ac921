"""Cross-Pod all-reduce of a pipelined model: the Pod's GW-Links carry the whole model's gradient.

Expected times are written out from the hierarchical ring's documented formula
(``ipusim/cost/collectives.py``): reduce-scatter inside each Pod over IPU-Links, all-reduce of the
scattered part across the C Pods over the GW-Links, all-gather inside.
"""

from __future__ import annotations

import math

import pytest

from ipusim.hardware import load_system
from ipusim.lowering.distribution import Distribution, DistributionSpec

PS = 1e12


def _expected_all_reduce(system, replicas: int, stride: int, num_bytes: int) -> int:
    """All-reduce of ``num_bytes`` per IPU, by hand, for replicas of ``stride`` IPUs each."""
    ipu, link, gw = system.ipu, system.ipu_link, system.gw_link
    pods = replicas * stride // system.ipus_per_pod
    per_pod = replicas // pods
    hops = system.ipu_link_hops(0, stride) if stride > 1 else 1
    sync = math.ceil(ipu.onchip_sync_cycles * PS / ipu.clock_hz) + round(
        hops * link.sync_per_hop_s * PS
    )
    link_step = round(link.latency_s * PS) + sync
    gw_step = round(gw.latency_s * PS) + sync
    # every shard position's ring runs at once: they share the IPU-Links and the GW-Links
    link_bw = link.bandwidth_bytes_per_s * link.efficiency * link.links_between_neighbours
    link_bw /= stride
    chassis = system.ipus_per_pod // system.ipus_per_chassis
    line_rate = gw.bandwidth_bytes_per_s * gw.ports * chassis
    pod_bw = min(gw.collective_bandwidth_bytes_per_s, line_rate) / stride
    inside = (per_pod - 1) * (link_step + math.ceil(num_bytes * PS / (2 * per_pod * link_bw)))
    share = num_bytes / per_pod  # what each participant sends across the Pods
    across = (pods - 1) * (gw_step + math.ceil(share * PS / (2 * pods * pod_bw / per_pod)))
    return 2 * (inside + across)


@pytest.mark.parametrize("stride,replicas", [(1, 128), (2, 64), (8, 16)])
def test_cross_pod_all_reduce_equals_its_closed_form(stride, replicas) -> None:
    system = load_system("POD128")
    dist = Distribution.resolve(DistributionSpec(replicas=replicas), system, stride, True, True)
    num_bytes = 40_000_000
    timed = dist.collective("all-reduce", num_bytes, "gradients")
    assert timed.duration_ps == _expected_all_reduce(system, replicas, stride, num_bytes)


def test_a_pods_gw_time_depends_on_the_model_not_on_its_split_over_ipus() -> None:
    # 320 MB of gradients per replica, on 1 IPU per replica or split over 8: the Pod sends the
    # same bytes across, so the GW-Link term is the same (the IPU-Link term is not).
    system = load_system("POD128")
    model = 320_000_000

    def gw_term(stride: int, replicas: int) -> float:
        across = Distribution.resolve(
            DistributionSpec(replicas=replicas), system, stride, True, True
        )
        inside = Distribution.resolve(
            DistributionSpec(replicas=replicas // 2), system, stride, True, True
        )
        share = model // stride
        total = across.collective("all-reduce", share, "g").duration_ps
        return total - inside.collective("all-reduce", share, "g").duration_ps

    one, eight = gw_term(1, 128), gw_term(8, 16)
    # by hand: reduce-scatter and all-gather across C = 2 Pods on a ring used both ways, each
    # (C - 1) / C x S / (2 B) per Pod, so S / (2 B) in all, plus one ring step each (the sync
    # part of a step is below 1 us, within the tolerance)
    rate = system.gw_link.collective_bandwidth_bytes_per_s
    steps = 2 * system.gw_link.latency_s
    assert one == pytest.approx((model / (2 * rate) + steps) * PS, rel=0.005)
    assert eight == pytest.approx(one, rel=0.005)


def test_sharded_optimizer_state_splits_the_all_reduce_around_the_update() -> None:
    # Replicated tensor sharding: a reduce-scatter of the gradients before the update and an
    # all-gather of the updated weights after it, each hierarchical (inside the Pod, then across
    # the Pods), so together they take the all-reduce's time; unsharded, one all-reduce.
    system = load_system("POD128")
    grads = 80_000_000
    state = 4 * grads  # Adam's two fp32 slots of fp16 weights

    def update(sharded: bool):
        spec = DistributionSpec(
            replicas=16, replicated_optimizer_state_sharding=sharded, offload_optimizer_state=False
        )
        return Distribution.resolve(spec, system, 8, True, True).update_instructions(
            grads, state, grads
        )

    before, after = update(True)
    assert [t.name for t in before] == ["reduce-scatter gradients"]
    assert [t.name for t in after] == ["all-gather weights"]
    expected = _expected_all_reduce(system, 16, 8, grads)
    assert before[0].duration_ps == after[0].duration_ps == expected // 2
    (plain,), () = update(False)
    assert plain.name == "all-reduce gradients" and plain.duration_ps == expected
