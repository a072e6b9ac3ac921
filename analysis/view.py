"""``ipusim view FOLDER``: one self-contained HTML file of a report that opens offline.

The figures are matplotlib's own SVG (the library every ipusim figure is drawn with, so the
page shows exactly what ``ipusim plot`` draws, with the house palette, and needs no script or
font from a network): the timeline, utilisation, memory per IPU, memory per tile and liveness.
The timeline zooms (mouse wheel, the zoom buttons, or ``view.html#zoom=4`` in a link) by narrowing
the SVG's view box;
the summary and the top compute sets and memory items (``report.top_ops``) are HTML tables.
Nothing is fetched: no ``src`` or ``href`` points outside the file.
"""

from __future__ import annotations

import html
import io
import os
from pathlib import Path

from analysis.report import _plans
from analysis.sources import load
from ipusim._files import write_text_atomic
from ipusim.trace import Report

__all__ = ["view_html", "write_view"]

#: Bars the timeline keeps at most (beyond this, rows are drawn as binned pixels): an SVG of a
#: few MB at most.
TIMELINE_RECORDS = 20_000
_TOP = 10

_SCRIPT = """
(function () {
  var svg = document.querySelector('#timeline svg');
  var box = svg.viewBox.baseVal;
  var full = {x: box.x, width: box.width};
  function zoom(factor, centre) {
    var width = Math.min(full.width, Math.max(full.width / 512, box.width / factor));
    var x = centre - (centre - box.x) * width / box.width;
    box.x = Math.max(full.x, Math.min(x, full.x + full.width - width));
    box.width = width;
    document.body.dataset.zoom = (full.width / width).toFixed(3);
  }
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    var r = svg.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.25 : 0.8, box.x + (e.clientX - r.left) / r.width * box.width);
  });
  document.getElementById('zoom-in').onclick = function () { zoom(2, box.x + box.width / 2); };
  document.getElementById('zoom-out').onclick = function () { zoom(0.5, box.x + box.width / 2); };
  document.getElementById('zoom-reset').onclick = function () {
    box.x = full.x; box.width = full.width; document.body.dataset.zoom = '1.000';
  };
  document.body.dataset.zoom = '1.000';
  var asked = /zoom=([0-9.]+)/.exec(location.hash);  // a link to a zoomed view: view.html#zoom=4
  if (asked) { zoom(parseFloat(asked[1]), full.x + full.width / 2); }
  document.body.dataset.figures = String(document.querySelectorAll('figure svg').length);
  document.body.dataset.ready = 'yes';
})();
"""

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
figure { margin: 1em 0; } figure svg { width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 1em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
button { margin-right: 0.4em; }
"""


def _svg(fig) -> str:
    """The figure as inline SVG, its text as ``<text>`` (readable and searchable in the page)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: inline SVG


def _figures(report: Report) -> dict[str, str]:
    from analysis import (
        liveness_plot,
        memory_by_category,
        tile_heatmap,
        timeline,
        utilisation_bars,
    )

    figures = {
        "timeline": _svg(timeline(report, max_records=TIMELINE_RECORDS)),
        "utilisation": _svg(utilisation_bars(report)),
    }
    if not report.memory.empty:
        figures["memory"] = _svg(memory_by_category(report))
    plans = [plan for plan in _plans(report) if plan.tile_bytes]
    if plans:
        fullest = max(plans, key=lambda plan: (max(plan.tile_bytes), -plan.ipu))
        figures["tiles"] = _svg(tile_heatmap(plans, ipu=fullest.ipu))
        if fullest.liveness is not None and fullest.liveness.step_names:
            figures["liveness"] = _svg(liveness_plot(plans, ipu=fullest.ipu))
    return figures


def _tables(report: Report) -> str:
    parts = []
    for by, title in (("time", "compute time"), ("exchange", "exchange time"), ("memory", "")):
        table = report.top_ops(_TOP, by)
        heading = f"Top compute sets by {title}" if title else "Largest memory items"
        parts.append(f"<h3>{heading}</h3>")
        parts.append(table.to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0))
    return "\n".join(parts)


def view_html(source: Report | str | os.PathLike[str], title: str | None = None) -> str:
    """The HTML text of the view of a report or report folder (see the module docstring)."""
    report = load(source)
    if not isinstance(report, Report):
        raise ValueError("ipusim view needs a report folder (a trace .npz alone has no report)")
    name = html.escape(title or f"ipusim report: {report.kind} on {report.system_name}")
    figures = "\n".join(
        f'<figure id="{key}">{svg}</figure>' for key, svg in _figures(report).items()
    )
    buttons = (
        '<p><button id="zoom-in">zoom in</button><button id="zoom-out">zoom out</button>'
        '<button id="zoom-reset">reset</button> (or the mouse wheel over the timeline)</p>'
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{name}</title>'
        f"<style>{_STYLE}</style></head><body>\n<h1>{name}</h1>\n"
        f'<pre id="summary">{html.escape(report.summary())}</pre>\n{buttons}\n{figures}\n'
        f'<section id="top-ops">{_tables(report)}</section>\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def write_view(
    source: Report | str | os.PathLike[str], path: str | os.PathLike[str] | None = None
) -> Path:
    """Write the view of ``source`` to ``path`` (default ``<folder>/view.html``); return it."""
    if path is None:
        if isinstance(source, Report):
            raise ValueError("give a path for the view of an in-memory report")
        path = Path(source) / "view.html"
    text = view_html(source)
    write_text_atomic(Path(path), text)
    return Path(path)
