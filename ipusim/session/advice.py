"""Measured advice: what would raise a run's throughput, found by simulating the run again with
each candidate change and ranking the changes by the gain they showed.

A :class:`WhatIf` keeps what a simulation was made from (the lowered step and its executions)
and can lower and simulate it again with one change: more steps per execution, only the loss
outfed, 8-bit input, 32 I/O tiles, another pipeline schedule, twice the accumulation of a
pipeline, recomputation on or off, optimizer state offloaded or kept on chip, twice the host
processes feeding the replicas. A change that no longer fits in
memory (lowering raises ``OutOfMemoryError``) or that IPU TensorFlow refuses for this program is
left out.

A larger micro-batch (2x and 4x) needs the step traced again at that batch: the front end gives
the handle a :data:`Retrace` (the Keras front end does, for every model and workload built on
it). The samples of an epoch stay the same (fewer steps), and so does the global batch where the
gradient accumulation count divides by the factor. A run whose front end cannot trace its step
again (a custom training loop) does not try it and says so in :attr:`WhatIf.notes`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ipusim.errors import IPUSimError

if TYPE_CHECKING:
    from ipusim.config import IPUConfig
    from ipusim.lowering import StepDescription
    from ipusim.session.run import LoweredRun, RunDescription
    from ipusim.trace import Report

__all__ = ["Advice", "WhatIf"]

#: I/O tiles tried when the run has none (32: the smallest count IPU TensorFlow's examples use,
#: e.g. graphcore/examples BERT and ResNet-50 configs; S).
IO_TILES = 32
#: Steps per execution tried: this many times the current count, at most (E: amortises the
#: host's per-execution work ten times more, the range IPU Keras examples use).
SPE_FACTOR = 10
#: A change below this relative gain is noise, not advice (E).
MIN_GAIN = 0.005
_SCHEDULES = ("grouped", "interleaved", "sequential")
#: Micro-batch factors tried (E: the doubling steps IPU examples' batch-size studies use).
MICRO_BATCH_FACTORS = (2, 4)


@dataclass(frozen=True)
class Advice:
    """One change, simulated.

    Attributes:
        change: what was changed, as the user would write it.
        throughput: simulated samples/s with the change.
        gain: throughput with the change / throughput without, minus 1.
    """

    change: str
    throughput: float
    gain: float

    def line(self) -> str:
        """``"<change>: 1,234 samples/s (+20.1%)"``."""
        return f"{self.change}: {self.throughput:,.0f} samples/s ({self.gain:+.1%})"


Executions = Sequence[tuple[int, int]]
Variant = tuple[str, Callable[[], "tuple[LoweredRun, Executions]"]]
#: Traces the run's step again for a micro-batch of the given size (per replica) and returns its
#: ``RunDescription`` (raises ``IPUSimError`` where the model cannot take that batch).
Retrace = Callable[[int], "RunDescription"]
#: Why a run does not try a larger micro-batch when its front end gave no :data:`Retrace`.
NO_RETRACE_NOTE = (
    "a larger micro-batch was not tried: this run's front end (a custom training loop or a "
    "step described directly) cannot trace its step again at another batch size"
)


class WhatIf:
    """A simulated run that can be simulated again with one change (see the module)."""

    def __init__(self, lowered: LoweredRun, executions: Executions, throughput: float) -> None:
        self.lowered = lowered
        self.executions = tuple(executions)
        self.throughput = float(throughput)
        #: Set by a front end that can trace the step again (see :data:`Retrace`).
        self.retrace: Retrace | None = None
        #: Changes that could not be tried for this run, and why (filled by :meth:`variants`).
        self.notes: list[str] = []
        self._advice: list[Advice] | None = None

    # ------------------------------------------------------------------ variants
    def _relower(
        self, description: RunDescription | None = None, config: IPUConfig | None = None
    ) -> LoweredRun:
        from ipusim.session.run import lower

        return lower(
            description or self.lowered.description,
            config if config is not None else self.lowered.config,
            self.lowered.system,
        )

    def _step(self, **fields: Any) -> RunDescription:
        description = self.lowered.description
        return replace(description, step=replace(description.step, **fields))

    def _per_epoch(self) -> dict[int, int]:
        """Steps run in each epoch."""
        per_epoch: dict[int, int] = {}
        for epoch, n in self.executions:
            per_epoch[epoch] = per_epoch.get(epoch, 0) + n
        return per_epoch

    def _longer_executions(self) -> list[Variant]:
        spe = max(n for _, n in self.executions)
        per_epoch = self._per_epoch()
        steps = min(per_epoch.values())
        longer = [k * spe for k in range(SPE_FACTOR, 1, -1) if steps % (k * spe) == 0]
        if not longer:
            return []
        n = longer[0]
        plan = [(e, n) for e, total in sorted(per_epoch.items()) for _ in range(total // n)]
        return [(f"steps_per_execution={n} (now {spe})", lambda: (self.lowered, plan))]

    def _more_accumulation(self) -> list[Variant]:
        """Twice the accumulation count of a pipelined step (the bubble amortised over twice
        the micro-batches; a larger global batch), each execution rounded up to whole weight
        updates."""
        description = self.lowered.description
        if description.pipeline is None or description.step.kind != "train":
            return []
        ga = 2 * description.gradient_accumulation
        changed = replace(description, gradient_accumulation=ga, micro_batches=None)
        plan = [(e, -(-n // ga) * ga) for e, n in self.executions]
        return [
            (
                f"gradient_accumulation_steps_per_replica={ga} "
                f"(now {description.gradient_accumulation}; a larger global batch)",
                lambda: (self._relower(description=changed), plan),
            )
        ]

    def _larger_micro_batches(self) -> list[Variant]:
        """The micro-batch :data:`MICRO_BATCH_FACTORS` times larger, the step traced again, for
        the same samples per epoch in 1/factor of the steps."""
        if self.retrace is None:
            self.notes.append(NO_RETRACE_NOTE)
            return []
        found: list[Variant] = []
        for factor in MICRO_BATCH_FACTORS:
            plan = self._micro_batch_plan(factor)
            if plan is not None:
                what, ga, executions = plan
                found.append((what, partial(self._retraced, factor, ga, executions)))
        return found

    def _micro_batch_plan(self, factor: int) -> tuple[str, int, list[tuple[int, int]]] | None:
        """What ``factor`` times the micro-batch means for this run: the change in words, the
        accumulation count and the executions; None when the epochs' steps or the steps per
        execution do not split into whole larger steps."""
        description = self.lowered.description
        batch, ga = description.step.batch_size, description.gradient_accumulation
        per_epoch = self._per_epoch()
        spe = max(n for _, n in self.executions)
        if any(total % factor for total in per_epoch.values()):
            return None
        same_global = ga % factor == 0
        new_ga = ga // factor if same_global else ga
        steps = {e: total // factor for e, total in per_epoch.items()}
        new_spe = spe if all(n % spe == 0 for n in steps.values()) else spe // factor
        if new_spe < 1 or any(n % new_spe for n in steps.values()) or new_spe % new_ga:
            return None
        executions = [(e, new_spe) for e, n in sorted(steps.items()) for _ in range(n // new_spe)]
        words = [f"{min(steps.values())} steps per epoch (same samples)"]
        if new_spe != spe:
            words.append(f"steps_per_execution={new_spe}")
        if new_ga != ga:
            words.append(f"gradient_accumulation_steps_per_replica={new_ga}, same global batch")
        else:
            words.append("a larger global batch")
        what = f"batch_size={factor * batch} per replica (now {batch}; {', '.join(words)})"
        return what, new_ga, executions

    def _retraced(
        self, factor: int, ga: int, executions: Executions
    ) -> tuple[LoweredRun, Executions]:
        assert self.retrace is not None  # only variants of a run with a Retrace call this
        description = self.retrace(factor * self.lowered.description.step.batch_size)
        micro_batches = description.micro_batches
        if description.pipeline is not None and description.step.kind == "train":
            micro_batches = ga  # a pipelined training step runs its accumulation count
        elif description.pipeline is not None:
            micro_batches = max(n for _, n in executions)
        changed = replace(description, gradient_accumulation=ga, micro_batches=micro_batches)
        return self._relower(description=changed), executions

    def _feeds(self) -> list[Variant]:
        step = self.lowered.description.step
        found: list[Variant] = []
        if step.kind == "train" and step.outfeed_copies > 1:
            loss_only = self._step(
                outfeed_bytes=step.outfeed_bytes // step.outfeed_copies, outfeed_copies=1
            )
            found.append(("outfeed only the loss (metrics=[])", lambda: self._lowered(loss_only)))
        eight_bit = _eight_bit_infeed_bytes(step)
        if eight_bit < step.infeed_bytes:
            smaller = self._step(infeed_bytes=eight_bit)
            found.append(
                ("8-bit input (uint8 images, cast on the IPU)", lambda: self._lowered(smaller))
            )
        return found

    def _lowered(self, description: RunDescription) -> tuple[LoweredRun, Executions]:
        return self._relower(description=description), self.executions

    def _configured(self, change: Callable[[IPUConfig], None]) -> tuple[LoweredRun, Executions]:
        config = copy.deepcopy(self.lowered.config)
        if config is not None:  # _settings offers these changes only with a config
            change(config)
        return self._relower(config=config), self.executions

    def _settings(self) -> list[Variant]:
        config = self.lowered.config
        if config is None:
            return []
        found: list[Variant] = []
        if int(config.io_tiles.num_io_tiles) == 0:
            found.append(
                (
                    f"io_tiles.num_io_tiles={IO_TILES} placed",
                    lambda: self._configured(_set_io_tiles),
                )
            )
        replicas = int(self.lowered.program.replicas)
        processes = int(config.experimental.multi_replica_distribution.process_count or 1)
        if replicas > processes and replicas % 2 == 0:
            more = min(replicas, 2 * processes)
            found.append(
                (
                    f"{more} host processes (multi_replica_distribution.process_count, now "
                    f"{processes})",
                    lambda: self._configured(lambda c: _set_processes(c, more)),
                )
            )
        recompute = bool(config.allow_recompute)
        found.append(
            (
                f"allow_recompute={not recompute}",
                lambda: self._configured(lambda c: setattr(c, "allow_recompute", not recompute)),
            )
        )
        return found

    def _distribution(self) -> list[Variant]:
        description = self.lowered.description
        found: list[Variant] = []
        pipeline = description.pipeline
        if pipeline is not None:
            for schedule in _SCHEDULES:
                if schedule != pipeline.schedule:
                    changed = replace(description, pipeline=replace(pipeline, schedule=schedule))
                    found.append(
                        (
                            f"pipeline_schedule={schedule.capitalize()}",
                            partial(self._lowered, changed),
                        )
                    )
        if description.step.kind == "train" and description.step.trainable:
            current = description.distribution.offload_optimizer_state  # None: the default
            for value in (True, False):
                if value is not current:
                    dist = replace(description.distribution, offload_optimizer_state=value)
                    changed = replace(description, distribution=dist)
                    found.append(
                        (
                            f"offload_weight_update_variables={value}",
                            partial(self._lowered, changed),
                        )
                    )
        return found

    def variants(self) -> list[Variant]:
        """Every change tried for this run: (what, a function giving (lowered, executions))."""
        self.notes.clear()
        return [
            *self._longer_executions(),
            *self._larger_micro_batches(),
            *self._more_accumulation(),
            *self._feeds(),
            *self._settings(),
            *self._distribution(),
        ]

    # ------------------------------------------------------------------ measuring
    def measure(self, variant: Variant) -> Advice | None:
        """Simulate one change; None when it does not fit or is refused for this program."""
        from ipusim.session.run import simulate

        what, make = variant
        try:
            lowered, executions = make()
            report = simulate(lowered, executions, publish=False).report
        except (IPUSimError, ValueError, NotImplementedError):
            return None  # out of memory, or not a valid program with this change
        if report.memory_plans and any(
            p.total_bytes > p.budget_bytes for p in report.memory_plans if p.budget_bytes
        ):
            return None
        throughput = float(report.throughput_samples_per_s)
        return Advice(what, throughput, throughput / self.throughput - 1.0)

    def advice(self) -> list[Advice]:
        """The changes that raised simulated throughput, best first (measured once, kept)."""
        if self._advice is None:
            measured = [self.measure(v) for v in self.variants()]
            found = [a for a in measured if a is not None and a.gain > MIN_GAIN]
            self._advice = sorted(found, key=lambda a: -a.gain)
        return list(self._advice)

    def host_range_line(self, report: Report) -> str | None:
        """The range of throughputs across the system's host presets, in words, when a host
        resource bounds ``report``'s run (see :mod:`ipusim.session.uncertainty`)."""
        from ipusim.session.uncertainty import host_range_line

        return host_range_line(report)


def _set_processes(config: IPUConfig, processes: int) -> None:
    distribution = config.experimental.multi_replica_distribution
    distribution.process_count = processes
    distribution.process_index = 0


def _set_io_tiles(config: IPUConfig) -> None:
    config.io_tiles.num_io_tiles = IO_TILES
    config.io_tiles.place_ops_on_io_tiles = True


def _eight_bit_infeed_bytes(step: StepDescription) -> int:
    """The infeed bytes with every floating-point input of two or more dimensions (images,
    feature rows; not targets) fed as one byte per element."""
    saved = 0
    for node in step.graph.nodes:
        if node.op.name != "placeholder":
            continue
        for symbol in node.outputs:
            spec = symbol.spec
            if spec.dtype in ("float32", "float16") and len(spec.shape) >= 2:
                elements = spec.nbytes // (4 if spec.dtype == "float32" else 2)
                saved += spec.nbytes - elements
    return max(int(step.infeed_bytes) - saved, 0)
