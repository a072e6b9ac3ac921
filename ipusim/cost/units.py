"""Unit conversions into the engine's integer picoseconds (one place, so every rounding agrees)."""

from __future__ import annotations

import math

from ipusim.errors import ConfigurationError

PS_PER_S = 10**12


def seconds_to_ps(seconds: float) -> int:
    """Seconds -> picoseconds, rounded to the nearest integer."""
    if seconds < 0:
        raise ConfigurationError(f"a duration cannot be negative, received {seconds} s")
    return round(seconds * PS_PER_S)


def cycles_to_ps(cycles: int | float, clock_hz: float) -> int:
    """Clock cycles at ``clock_hz`` -> picoseconds, rounded up (a partial cycle is a cycle)."""
    if cycles <= 0:
        return 0
    return math.ceil(cycles * PS_PER_S / clock_hz)


def transfer_ps(num_bytes: int, bandwidth_bytes_per_s: float, latency_s: float = 0.0) -> int:
    """Time to move ``num_bytes`` over a link: latency plus bytes / bandwidth (rounded up)."""
    if num_bytes <= 0:
        return 0
    if bandwidth_bytes_per_s <= 0:
        raise ConfigurationError(
            f"bandwidth must be positive, received {bandwidth_bytes_per_s} B/s"
        )
    return seconds_to_ps(latency_s) + math.ceil(num_bytes * PS_PER_S / bandwidth_bytes_per_s)
