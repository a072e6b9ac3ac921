"""The ops that take the time (PopVision's first view): per IPU, each compute set's time on the
compute and exchange tracks over the records the trace keeps, and the largest memory items.

``top_ops(report)`` ranks compute sets by compute time; ``by="exchange"`` by exchange time;
``by="memory"`` lists the largest memory items instead. ``format_top_ops`` is what ``ipusim
report --top-ops`` prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ipusim.errors import ConfigurationError

if TYPE_CHECKING:
    from ipusim.trace.report import Report

__all__ = ["TOP_OPS_BY", "format_top_ops", "top_ops"]

#: What the table can be ranked by.
TOP_OPS_BY = ("time", "exchange", "memory")
_COLUMNS = ["ipu", "name", "layer", "op", "count", "compute_s", "exchange_s", "flops", "share"]


def _check(by: str, n: int) -> None:
    if by not in TOP_OPS_BY:
        raise ConfigurationError(f"by must be one of {TOP_OPS_BY}; got {by!r}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ConfigurationError(f"n must be an integer >= 1; got {n!r}")


def top_ops(report: Report, n: int = 10, by: str = "time", ipu: int | None = None) -> pd.DataFrame:
    """The ``n`` compute sets (or memory items) of each IPU that take the most.

    Args:
        report: a :class:`~ipusim.trace.Report`.
        n: rows per IPU.
        by: ``"time"`` (compute seconds), ``"exchange"`` (exchange seconds) or ``"memory"``
            (the largest memory items: columns ``ipu``, ``name``, ``category``, ``bytes``,
            ``share`` of the IPU's total).
        ipu: only this IPU (default: every IPU of replica 0; the host is not an op).

    Returns:
        For ``time`` / ``exchange``: columns ``ipu``, ``name`` (the compute set), ``layer``,
        ``op``, ``count`` (records), ``compute_s``, ``exchange_s``, ``flops`` and ``share`` (of
        the IPU's compute or exchange time in the kept records), largest first per IPU.

    Raises:
        ValueError: for an unknown ``by`` or a bad ``n``.
    """
    _check(by, n)
    if by == "memory":
        items = report.memory_items
        if ipu is not None:
            items = items[items.ipu == ipu]
        total = items.groupby("ipu").bytes.transform("sum")
        items = items.assign(share=items.bytes / total.where(total > 0, 1))
        ranked = items.sort_values(["ipu", "bytes"], ascending=[True, False], kind="stable")
        return ranked.groupby("ipu").head(n).reset_index(drop=True)
    records = report.trace.to_dataframe()
    records = records[(records.ipu >= 0) & records.track.isin(["compute", "exchange"])]
    if ipu is not None:
        records = records[records.ipu == ipu]
    if records.empty:
        return pd.DataFrame(columns=_COLUMNS)
    seconds = records.duration_s
    records = records.assign(
        compute_s=seconds.where(records.track == "compute", 0.0),
        exchange_s=seconds.where(records.track == "exchange", 0.0),
        flops=records.flops.where(records.track == "compute", 0),
    )
    grouped = records.groupby(["ipu", "name"], sort=False).agg(
        layer=("layer", "first"),
        op=("op", "first"),
        count=("name", "size"),
        compute_s=("compute_s", "sum"),
        exchange_s=("exchange_s", "sum"),
        flops=("flops", "sum"),
    )
    key = "compute_s" if by == "time" else "exchange_s"
    grouped = grouped.reset_index()
    total = grouped.groupby("ipu")[key].transform("sum")
    grouped["share"] = grouped[key] / total.where(total > 0, 1.0)
    ranked = grouped.sort_values(["ipu", key], ascending=[True, False], kind="stable")
    return ranked.groupby("ipu").head(n).reset_index(drop=True)[_COLUMNS]


def format_top_ops(report: Report, n: int = 10) -> str:
    """The text of ``ipusim report --top-ops``: per IPU, the top compute sets by compute time,
    by exchange time, and the largest memory items."""
    blocks = []
    for by, title in (("time", "compute time"), ("exchange", "exchange time")):
        table = top_ops(report, n, by)
        key = "compute_s" if by == "time" else "exchange_s"
        shown = table.assign(
            ms=(table[key] * 1e3).map("{:,.3f}".format), share=table.share.map("{:.1%}".format)
        )[["ipu", "name", "op", "count", "ms", "share"]]
        blocks.append(f"Top compute sets by {title} (per IPU, kept records)")
        blocks.append(shown.to_string(index=False) if len(shown) else "  (none)")
    memory = top_ops(report, n, "memory")
    shown = memory.assign(
        MiB=(memory.bytes / 2**20).map("{:,.2f}".format), share=memory.share.map("{:.1%}".format)
    )[["ipu", "name", "category", "MiB", "share"]]
    blocks.append("Largest memory items (per IPU)")
    blocks.append(shown.to_string(index=False) if len(shown) else "  (none)")
    return "\n".join(blocks)
