"""What a trace kept of its run: its detail level and the executions it kept."""

from __future__ import annotations

from dataclasses import dataclass

from ipusim.errors import TraceError

#: Detail a trace can keep: every record, one record per block, or counters only.
DETAIL_LEVELS = ("full", "blocks", "summary")


@dataclass(frozen=True)
class TraceDetail:
    """What a trace kept of its run.

    Attributes:
        level: ``"full"``, ``"blocks"`` or ``"summary"`` (see :data:`DETAIL_LEVELS`).
        kept_executions: executions (from the first) whose records are kept.
        executions: executions in the run (0 for a trace built from records).
        kept_steps / steps: the same in micro-batch steps (per replica).
        records: records of the whole run at full detail (replica 0 and the host).
    """

    level: str = "full"
    kept_executions: int = 0
    executions: int = 0
    kept_steps: int = 0
    steps: int = 0
    records: int = 0

    def __post_init__(self) -> None:
        if self.level not in DETAIL_LEVELS:
            raise TraceError(f"detail level must be one of {DETAIL_LEVELS}; got {self.level!r}")

    @property
    def complete(self) -> bool:
        """Whether every record of the run is kept (at the trace's level)."""
        return self.level != "summary" and self.kept_executions >= self.executions

    def describe(self) -> str:
        """One line for reports: what the trace kept."""
        if self.executions == 0:
            return f"trace: {self.records:,} records"
        what = {"full": "every record", "blocks": "one record per block"}.get(self.level, "")
        if self.level == "summary" or self.kept_executions == 0:
            return (
                f"trace: counters only ({self.executions:,} executions, {self.records:,} "
                "records at full detail not kept)"
            )
        if self.kept_executions >= self.executions:
            return f"trace: {what} of all {self.executions:,} executions"
        return (
            f"trace: {what} of executions 1-{self.kept_executions:,} of {self.executions:,} "
            f"(steps 0-{self.kept_steps - 1:,} of {self.steps:,}); counters for the rest"
        )
