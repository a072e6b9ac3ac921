"""Syncs that span IPUs (pure functions, integer picoseconds)."""

from __future__ import annotations

from ipusim.cost.units import cycles_to_ps, seconds_to_ps
from ipusim.hardware.specs import SystemSpec


def cross_ipu_sync_ps(system: SystemSpec, ipus: int) -> int:
    """One BSP sync across IPUs ``0 .. ipus - 1`` of ``system``.

    The tiles of each IPU first sync among themselves (``onchip_sync_cycles``), then the signal
    crosses the IPU-Link hops to the farthest IPU of the group (``sync_per_hop_s`` each, Graphcore's
    multi-IPU test model). One IPU pays only its on-chip sync.

    Args:
        system: a ``SystemSpec``.
        ipus: IPUs taking part (all replicas' IPUs: a replicated program syncs as one).
    """
    ipu = system.ipu
    onchip = cycles_to_ps(ipu.onchip_sync_cycles, ipu.clock_hz)
    if ipus <= 1:
        return onchip
    hops = system.sync_hops(ipus)
    return onchip + seconds_to_ps(hops * system.ipu_link.sync_per_hop_s)
