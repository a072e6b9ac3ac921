"""The ``config.ipusim`` category: ipusim's own settings, NOT part of IPU TensorFlow.

Everything else in :class:`~ipusim.config.IPUConfig` mirrors IPU TensorFlow 2 option for
option. The settings below have no counterpart there: they say which machine to simulate, how
fast the simulated host is, and whether to compute the numbers, time the machine, or both. A
script written for IPU TensorFlow never touches them and gets the defaults. They obey the same
strict typing as the other options and are checked when the system is configured.
"""

from __future__ import annotations

import difflib
import math

from ipusim.choices import ENGINES, PRECISIONS
from ipusim.config._base import Option, _ConfigBase
from ipusim.errors import ConfigurationError

__all__ = [
    "ENGINES",
    "PRECISIONS",
    "SYSTEM_PRESETS_BY_SIZE",
    "TRACE_DETAILS",
    "USE_SYSTEM_HOST_OVERHEAD",
]

#: ``ipusim.host_overhead_s`` value meaning "use the system preset's host overhead".
USE_SYSTEM_HOST_OVERHEAD = -1.0

#: Longest host time per execution, callback or outfeed element (seconds). E: an hour; measured
#: host overheads are microseconds to milliseconds (system-*.toml: 2.8 ms), so more is a unit
#: mistake, and runs must fit in simulated time (ipusim.engine.time_limit).
MAX_HOST_SECONDS = 3600.0

#: Slowest input pipeline (samples/s) besides 0.0 (modelled). E: one sample per 1000 s.
MIN_HOST_DATASET_RATE = 1e-3

#: Allowed values of ``ipusim.trace_detail``.
TRACE_DETAILS = ("auto", "full", "blocks", "summary")

#: Systems chosen when ``ipusim.system`` is "": (largest IPU count, preset name), GC200 IPUs.
SYSTEM_PRESETS_BY_SIZE = ((1, "IPU"), (4, "M2000"), (16, "POD16"), (64, "POD64"))


class _IpusimConfig(_ConfigBase):
    _FIELDS = (
        Option(
            "system",
            "",
            "Machine to simulate: a preset name (for example 'IPU', 'M2000', 'POD16', "
            "'POD64') or the path of a system TOML file, resolved by "
            "ipusim.hardware.load_system when the system is configured. The default '' picks "
            "the smallest GC200 system that holds the requested IPUs: 'IPU' for 1, 'M2000' for "
            "2 to 4, 'POD16' for up to 16, 'POD64' for up to 64 (more needs a TOML file).",
        ),
        Option(
            "host",
            "",
            "Host server driving the IPUs: a host preset name (ipusim.hardware.hosts."
            "list_hosts(): 'EPYC-7742', 'EPYC-7763', 'Xeon-8168') whose CPU speed, cores and "
            "round trip set the input pipeline's, the stream copies' and the per-execution "
            "host costs. The default '' picks the host the vendor shipped with the system: "
            "the IPU-Server (Dell DSS 8440, Xeon Platinum 8168) for C2 cards, the dual EPYC "
            "7742 server for IPU-Machine systems.",
        ),
        Option(
            "host_dataset_rate",
            0.0,
            "Rate at which the host's input pipeline produces samples, in samples/s. 0.0 (the "
            "default) models it from what fit / evaluate / predict is given: the Dataset's "
            "transformations, or Keras' adapter for arrays, on the system preset's host "
            "(ipusim.data.host_cost). A positive figure (a dataset_benchmark result, say) "
            "replaces the model; math.inf means unlimited: the dataset never holds the infeed "
            "back.",
        ),
        Option(
            "host_overhead_s",
            USE_SYSTEM_HOST_OVERHEAD,
            "Host time per execution (per steps_per_execution steps: launching the program, "
            "control-loop work), in seconds. -1.0 (the default) uses the system preset's value.",
        ),
        Option(
            "host_outfeed_drain_s",
            0.0,
            "Host time spent on each outfeed element when it is dequeued, in seconds.",
        ),
        Option(
            "host_callback_s",
            0.0,
            "Host time per Keras callback invocation, in seconds.",
        ),
        Option(
            "numerics",
            True,
            "Really compute the tensors (train the model). False runs timing only: shapes, "
            "FLOPs and bytes go through the cost model, kernels are skipped, results are "
            "meaningless.",
        ),
        Option(
            "precision",
            "fp32",
            "Arithmetic the simulated IPU uses, for the timing and for the numbers: 'fp32' "
            "(float32 values and sums; float16 tensors of the model stay half), 'fp16.16' "
            "(float32 tensors are computed as float16, with float16 partial sums in matrix "
            "products and convolutions) or 'fp16.32' (float16 values, float32 partial sums). "
            "A partialsType in matmuls/convolutions.poplar_options overrides the partial-sum "
            "type of the numbers. See docs/numerics.md.",
        ),
        Option(
            "timing",
            True,
            "Simulate the machine and report time. False only computes the numbers.",
        ),
        Option(
            "engine",
            "auto",
            "Which engine times the run: 'fast' (a compiled max-plus recurrence over the "
            "schedule, for runs the host cannot hold back), 'simpy' (the discrete-event "
            "processes, for any run) or 'auto' (the default: 'fast' whenever it applies). Both "
            "give identical end times and traces.",
        ),
        Option(
            "trace_detail",
            "auto",
            "What the trace keeps: 'full' (every record), 'blocks' (one record per block of "
            "supersteps), 'summary' (whole-run counters only) or 'auto' (the default: every "
            "record of the first executions within trace_records records, one record per "
            "block if not even one execution fits, counters for the rest). Reports cover the "
            "whole run at every level.",
        ),
        Option(
            "trace_records",
            1_000_000,
            "Records the 'auto' trace detail keeps at most (replica 0 and the host).",
        ),
    )

    def _validate(self) -> None:
        if self.host:
            from ipusim.hardware.hosts import list_hosts, load_host

            try:
                load_host(self.host)
            except ValueError:
                raise ConfigurationError(
                    f"{self._full_name('host')} = {self.host!r} is not a host preset; use one "
                    f"of {', '.join(repr(h) for h in list_hosts())}, or '' for the system's "
                    "own host."
                ) from None
        rate = self.host_dataset_rate
        if math.isnan(rate) or rate < 0.0 or 0.0 < rate < MIN_HOST_DATASET_RATE:
            raise ConfigurationError(
                f"{self._full_name('host_dataset_rate')} = {rate!r}, but it must be a number of "
                f"samples/s >= {MIN_HOST_DATASET_RATE:g} (0.0 models the input pipeline, "
                "math.inf means unlimited)."
            )
        for name in ("host_outfeed_drain_s", "host_callback_s"):
            value = self.__dict__[name]
            if not math.isfinite(value) or not 0.0 <= value <= MAX_HOST_SECONDS:
                raise ConfigurationError(
                    f"{self._full_name(name)} = {value!r}, but it must be a number of seconds "
                    f"from 0.0 to {MAX_HOST_SECONDS:g}."
                )
        overhead = self.host_overhead_s
        if not (0.0 <= overhead <= MAX_HOST_SECONDS or overhead == USE_SYSTEM_HOST_OVERHEAD):
            raise ConfigurationError(
                f"{self._full_name('host_overhead_s')} = {overhead!r}, but it must be a number "
                f"of seconds from 0.0 to {MAX_HOST_SECONDS:g}, or -1.0 to use the system "
                "preset's value."
            )
        if self.precision not in PRECISIONS:
            close = difflib.get_close_matches(self.precision, PRECISIONS, n=1)
            sugg = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigurationError(
                f"{self._full_name('precision')} = {self.precision!r} is not a known precision; "
                f"use one of {', '.join(repr(p) for p in PRECISIONS)}.{sugg}"
            )
        for name, allowed in (("engine", ENGINES), ("trace_detail", TRACE_DETAILS)):
            if self.__dict__[name] not in allowed:
                raise ConfigurationError(
                    f"{self._full_name(name)} = {self.__dict__[name]!r} is not one of "
                    f"{', '.join(repr(a) for a in allowed)}."
                )
        if self.trace_records < 0:
            raise ConfigurationError(
                f"{self._full_name('trace_records')} = {self.trace_records!r}, but it must be "
                ">= 0 (records the trace keeps)."
            )
        if not self.numerics and not self.timing:
            raise ConfigurationError(
                f"{self._full_name('numerics')} and {self._full_name('timing')} are both False, "
                "so nothing would be computed or simulated. Turn at least one of them on."
            )


def preset_for_ipus(num_ipus: int) -> str:
    """Name of the smallest GC200 system preset holding ``num_ipus`` IPUs.

    Raises:
        ValueError: ``num_ipus`` is below 1 or above the largest preset (64).
    """
    if num_ipus < 1:
        raise ConfigurationError(f"A system needs at least 1 IPU; {num_ipus} were requested.")
    for size, name in SYSTEM_PRESETS_BY_SIZE:
        if num_ipus <= size:
            return name
    largest, name = SYSTEM_PRESETS_BY_SIZE[-1]
    raise ConfigurationError(
        f"The configuration needs {num_ipus} IPUs, more than the largest preset system "
        f"({name}, {largest} IPUs). Describe a bigger machine in a TOML file and set "
        "config.ipusim.system to its path."
    )
