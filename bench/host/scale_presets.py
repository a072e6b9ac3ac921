"""Derive the host presets' speed ratios (ipusim/hardware/hosts/*.toml) from published CPU figures
and the reference host's ratios, which were scaled from this machine's measurements.

The chain (issue 26):

1. This machine (bench/tfdata/README.md, bench/host/measure_host.py): the tf.data costs, the JPEG
   loader and the torch loader were measured here. Its pipe round trip between threads is
   7.6-25 us (bench/tfdata/handoff.c; measure_host.py's Python queue round trip ~25 us), a system
   call 0.37-0.83 us, a single-thread memcpy 2.5-10 GB/s: a shared KVM micro-VM.
2. The reference host, dual EPYC 7742 (Zen 2, 3.4 GHz boost): compute terms x1.0 (its core's
   clock and IPC against this Zen 3 VM core, 0.82-1.22, pulled down by this VM's page faults),
   call terms x0.25 (a bare-metal thread hand-off of ~2 us against 7.6-18.4 us here). Both E, from
   bench/tfdata/README.md "Scaling to an IPU-POD host".
3. Every other preset, from the reference by published figures:
   - compute_scale = ref x (ref boost x ref IPC) / (boost x IPC): single-thread speed;
   - call_scale = ref x (half the hand-off is user code, scaling with compute; half is the kernel,
     which does not) x kernel_factor (page-table isolation on CPUs exposed to Meltdown);
   - round_trip_scale = call_scale / ref call_scale (the round trip is calls and hand-offs).

Run: ``/work/venv/bin/python bench/host/scale_presets.py``; writes
``bench/host/results/presets.json``, which tests/hardware/test_host_presets.py compares with the
preset files.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).parent / "results" / "presets.json"

#: The reference host's ratios to this machine (E: bench/tfdata/README.md).
REFERENCE = {"name": "EPYC-7742", "boost_ghz": 3.4, "ipc": 1.0, "compute": 1.0, "call": 0.25}

#: Published figures of the other hosts: max boost (S: vendor pages), IPC relative to Zen 2 and
#: the kernel factor (E, with their reasons).
HOSTS = {
    "EPYC-7763": {
        "boost_ghz": 3.5,  # S: AMD EPYC 7763, 3.5 GHz max boost
        "ipc": 1.19,  # S/2nd: AMD: Zen 3 ~19% higher IPC than Zen 2 (wccftech.com 2021-04-15)
        "kernel": 1.0,  # not exposed to Meltdown
    },
    "Xeon-8168": {
        "boost_ghz": 3.7,  # S: Intel ARK Xeon Platinum 8168, 3.7 GHz max turbo
        "ipc": 0.85,  # E: Skylake-SP ~15% below Zen 2 per clock (AMD's Zen 2 launch claims)
        "kernel": 1.5,  # E: Meltdown -> page-table isolation: syscalls and switches ~1.5x dearer
    },
}


def derive(figures: dict[str, float]) -> dict[str, float]:
    """The three ratios of a host with ``figures`` (boost_ghz, ipc, kernel)."""
    ratio = (REFERENCE["boost_ghz"] * REFERENCE["ipc"]) / (figures["boost_ghz"] * figures["ipc"])
    compute = REFERENCE["compute"] * ratio
    call = REFERENCE["call"] * (0.5 * ratio + 0.5) * figures["kernel"]
    return {
        "compute_scale": round(compute, 2),
        "call_scale": round(call, 2),
        "round_trip_scale": round(call / REFERENCE["call"], 2),
    }


def main() -> None:
    table = {
        REFERENCE["name"]: {
            "compute_scale": REFERENCE["compute"],
            "call_scale": REFERENCE["call"],
            "round_trip_scale": 1.0,
        }
    }
    table.update({name: derive(figures) for name, figures in HOSTS.items()})
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(table, indent=2) + "\n")
    tmp.replace(OUT)
    print(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
