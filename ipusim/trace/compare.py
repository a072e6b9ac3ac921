"""Two reports side by side (``ipusim compare A B``): throughput, simulated time, utilisation,
memory, bottleneck and top ops, with the differences named.

:func:`compare_reports` returns the rows of the table and the named differences;
:func:`format_comparison` the text ``ipusim compare`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ipusim.trace.reports import UTILISATION_STATES, state_column
from ipusim.trace.top_ops import top_ops

if TYPE_CHECKING:
    from ipusim.trace.report import Report

__all__ = ["Comparison", "compare_reports", "format_comparison"]

#: A relative change below this is not named as a difference (E: run-to-run noise is zero in a
#: deterministic simulator, so this only keeps rounding out of the list).
SAME_WITHIN = 0.005
_TOP = 5


@dataclass(frozen=True)
class Comparison:
    """Two reports compared.

    Attributes:
        rows: (figure, value of A, value of B, B against A) for the table, as text.
        differences: one sentence per difference found, most telling first.
    """

    rows: tuple[tuple[str, str, str, str], ...]
    differences: tuple[str, ...]


def _ratio(a: float, b: float) -> str:
    if a == 0:
        return "" if b == 0 else "new"
    return f"{b / a:.2f}x"


def _figures(report: Report) -> dict[str, float]:
    util = report.utilisation
    memory = report.memory
    figures = {
        "throughput (samples/s)": float(report.throughput_samples_per_s),
        "simulated time (s)": float(report.seconds),
        "samples": float(report.samples),
    }
    for state in UTILISATION_STATES:
        figures[f"{state} share (mean over IPUs)"] = float(
            util[state_column(state, "share")].mean()
        )
    figures["memory, fullest IPU (MiB)"] = float(memory.total_bytes.max() / 2**20)
    figures["memory, fullest tile (of tile SRAM)"] = float(memory.fraction_of_tile_budget.max())
    return figures


def _text(name: str, value: float) -> str:
    if "share" in name or "of tile" in name:
        return f"{value:.1%}"
    return f"{value:,.4g}" if abs(value) < 100 else f"{value:,.0f}"


def _top_names(report: Report) -> list[str]:
    table = top_ops(report, _TOP, "time")
    return list(dict.fromkeys(table.name))[:_TOP]


def compare_reports(a: Report, b: Report) -> Comparison:
    """Compare report ``b`` with report ``a`` (see the module docstring)."""
    fa, fb = _figures(a), _figures(b)
    rows = [
        (name, _text(name, fa[name]), _text(name, fb[name]), _ratio(fa[name], fb[name]))
        for name in fa
    ]
    ba, bb = a.bottleneck, b.bottleneck
    rows.append(
        ("bound by", f"{ba.resource} ({ba.share:.0%})", f"{bb.resource} ({bb.share:.0%})", "")
    )
    differences = []
    ta, tb = fa["throughput (samples/s)"], fb["throughput (samples/s)"]
    if ta and abs(tb / ta - 1) > SAME_WITHIN:
        differences.append(f"throughput: B is {tb / ta:.2f}x A ({ta:,.0f} -> {tb:,.0f} samples/s)")
    if ba.resource != bb.resource:
        differences.append(f"bottleneck: A is bound by {ba.resource}, B by {bb.resource}")
    for name in fa:
        if "share" in name and abs(fb[name] - fa[name]) > 0.05:
            differences.append(f"{name}: {fa[name]:.1%} -> {fb[name]:.1%}")
    ma, mb = fa["memory, fullest IPU (MiB)"], fb["memory, fullest IPU (MiB)"]
    if ma and abs(mb / ma - 1) > SAME_WITHIN:
        differences.append(f"memory of the fullest IPU: {ma:,.1f} -> {mb:,.1f} MiB")
    top_a, top_b = _top_names(a), _top_names(b)
    rows.append(("top compute sets", ", ".join(top_a), ", ".join(top_b), ""))
    if top_a and top_b and top_a[0] != top_b[0]:
        differences.append(f"the costliest compute set: {top_a[0]} in A, {top_b[0]} in B")
    only_b = [n for n in top_b if n not in top_a]
    if only_b:
        differences.append(f"in B's top {_TOP} compute sets only: {', '.join(only_b)}")
    return Comparison(tuple(rows), tuple(differences))


def format_comparison(a: Report, b: Report, names: tuple[str, str] = ("A", "B")) -> str:
    """The table and the differences, as ``ipusim compare`` prints them."""
    result = compare_reports(a, b)
    width = max(len(r[0]) for r in result.rows)
    va = max(len(names[0]), *(len(r[1]) for r in result.rows if r[0] != "top compute sets"))
    lines = [f"A: {names[0]}", f"B: {names[1]}", ""]
    lines.append(f"{'':{width}}  {'A':>{va}}  B")
    for name, x, y, ratio in result.rows:
        if name == "top compute sets":
            lines += [f"{name}:", f"  A: {x}", f"  B: {y}"]
        else:
            lines.append(f"{name:{width}}  {x:>{va}}  {y}" + (f"  ({ratio})" if ratio else ""))
    lines.append("")
    lines.append("Differences:" if result.differences else "No differences above 0.5%.")
    lines += [f"  - {d}" for d in result.differences]
    return "\n".join(lines)
