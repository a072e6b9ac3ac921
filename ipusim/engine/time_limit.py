"""The longest run simulated time can hold, checked before and after the engine runs.

Simulated time is integer picoseconds in int64 (exact and deterministic; the compiled engine
adds them without overflow checks). int64 holds 2**63 ps, about 106.7 days; runs may last up to
:data:`MAX_RUN_PS` (2**62 ps, about 53.4 days) so that a start plus a duration never wraps. A
run that would last longer comes from an implausible setting (an hour of host overhead per
execution, a data rate of one sample a minute, a kilohertz clock) and is rejected before it
starts, naming the setting, from lower bounds of its length; whatever the bounds miss is caught
when the run ends.
"""

from __future__ import annotations

from ipusim.engine.options import HostOptions, RunPlan
from ipusim.errors import ConfigurationError
from ipusim.lowering.program import Program
from ipusim.trace._checks import MAX_TIME_PS

__all__ = ["MAX_RUN_PS", "check_run_end", "check_run_length"]

#: Longest simulated run (picoseconds). D: 2**62 ps = 4.6e6 s, half of int64's range.
MAX_RUN_PS = MAX_TIME_PS

_PS_PER_DAY = 86_400 * 10**12
_LIMIT = f"the longest run ipusim simulates ({MAX_RUN_PS / _PS_PER_DAY:.1f} days)"


def _days(ps: int) -> str:
    return f"{ps / _PS_PER_DAY:,.1f} days"


def check_run_length(program: Program, plan: RunPlan, options: HostOptions) -> None:
    """Reject a run whose host work alone lasts beyond :data:`MAX_RUN_PS`.

    Raises:
        ConfigurationError: naming the setting that makes the run too long.
    """
    executions = len(plan.executions)
    overhead = executions * options.per_execution_overhead_ps
    if overhead > MAX_RUN_PS:
        raise ConfigurationError(
            f"the host overhead per execution ({options.per_execution_overhead_ps / 1e12:g} s: "
            f"ipusim.host_overhead_s or the system's host.per_execution_overhead) times "
            f"{executions:,} executions lasts {_days(overhead)}, beyond {_LIMIT}; lower the "
            "overhead, raise steps_per_execution or simulate fewer steps"
        )
    produce = plan.total_steps * program.batch_size * options.sample_ps
    if produce > MAX_RUN_PS:
        raise ConfigurationError(
            f"the input pipeline makes a sample every {options.sample_ps / 1e12:g} s "
            f"(ipusim.host_dataset_rate, or the modelled dataset); {plan.total_steps:,} steps of "
            f"{program.batch_size} samples take {_days(produce)}, beyond {_LIMIT}; raise the "
            "rate or simulate fewer steps"
        )
    drains = plan.total_steps * options.outfeed_drain_ps
    if drains > MAX_RUN_PS:
        raise ConfigurationError(
            f"ipusim.host_outfeed_drain_s ({options.outfeed_drain_ps / 1e12:g} s per element) "
            f"over {plan.total_steps:,} steps lasts {_days(drains)}, beyond {_LIMIT}; lower it"
        )


def check_run_end(end_ps: int, execution_end_ps: tuple[int, ...]) -> None:
    """Reject a run that ended beyond :data:`MAX_RUN_PS` (or whose times wrapped around).

    Raises:
        ConfigurationError: naming the settings that make runs long.
    """
    ends = list(execution_end_ps)
    wrapped = any(b < a for a, b in zip([0, *ends], ends, strict=False))
    if end_ps < 0 or end_ps > MAX_RUN_PS or wrapped:
        raise ConfigurationError(
            f"the simulated run lasts beyond {_LIMIT}: a setting is implausible. Check the "
            "hardware figures (ipu.clock, link and host bandwidths), ipusim.host_dataset_rate, "
            "ipusim.host_overhead_s and the number of steps"
        )
