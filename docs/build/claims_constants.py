"""The calibration constants docs/validation.md quotes (its table of host constants and the
figures beside it), each checked against where ipusim reads it: the M2000 system preset, a
calibration row's arguments, or the bench result it came from. A constant refitted without
updating the prose fails ``tests/docs``."""

from __future__ import annotations

import json
import tomllib
from functools import cache

from docs.build.artefacts import ROOT
from docs.build.claims import VALIDATION_MD, Claim
from ipusim.hardware import load_system

ROWS = ROOT / "validation" / "rows"
TFDATA_MODEL = ROOT / "bench" / "tfdata" / "results" / "cost_model_cpu_min.json"


@cache
def _row(name: str) -> dict:
    return tomllib.loads((ROWS / f"{name}.toml").read_text(encoding="utf-8"))


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:g}"


def _host_table() -> tuple[str, ...]:
    """The M2000 preset's host figures and the round trips of the PopXL and PopTorch rows."""
    system = load_system("M2000")
    host, remote = system.host, system.streaming_memory
    assert remote is not None  # the M2000 has Streaming Memory
    return (
        _ms(host.per_execution_overhead_s),
        _ms(_row("P4")["args"]["host-overhead"]),
        _ms(_row("T1")["args"]["host-overhead"]),
        f"{1e6 * host.stream_copy_overhead_s:g}",
        f"{host.stream_bandwidth_bytes_per_s / 1e9:g}",
        f"{remote.bandwidth_bytes_per_s_per_ipu / 1e9:g}",
    )


def _p4_step() -> tuple[str, ...]:
    """P4's published time per step: its micro-batch over its measured samples per second."""
    row = _row("P4")
    return (f"{1e3 * row['args']['micro-batch'] / row['measured']:.2f}",)


def _tfdata_composition() -> tuple[str, ...]:
    check = json.loads(TFDATA_MODEL.read_text(encoding="utf-8"))["model"]
    return (f"{abs(check['seed_composition_check']['error_pct']):.1f}",)


CONSTANT_CLAIMS: tuple[Claim, ...] = (
    Claim(
        VALIDATION_MD,
        r"`host\.per_execution_overhead` \| (\S+) ms .*?\n\| PopXL round trip .*? \| (\S+) ms .*?\n"
        r"\| PopTorch round trip .*? \| (\S+) ms .*?`host\.stream_copy_overhead` \| (\S+) µs .*?"
        r"`host\.stream_bandwidth` \| (\S+) GB/s .*?`streaming_memory\.bandwidth_per_ipu` \| "
        r"(\S+) GB/s",
        _host_table,
    ),
    Claim(VALIDATION_MD, r"P4's (\S+) ms per step include a torch DataLoader", _p4_step),
    Claim(VALIDATION_MD, r"pipeline predicted from its parts within (\S+)%", _tfdata_composition),
)
