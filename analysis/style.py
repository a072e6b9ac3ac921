"""The house style of every figure: colours per phase, IPU state and memory category, figure
creation and saving, and unit formatting. One place, so every figure agrees.

Figures are made with :class:`matplotlib.figure.Figure` and an Agg canvas, never with pyplot: no
global figure registry, no GUI backend, safe to use from several threads at once.
"""

from __future__ import annotations

import os
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ipusim.trace import TRACE_PHASES

# Colours mean one thing in every figure: a phase palette (what the program is doing, the strong
# Tableau 10 hues), a resource palette (where an IPU's time goes: other strong hues) and a memory
# palette (the light Tableau 20 hues). No colour appears in two palettes except where the meaning
# is the same: host I/O is purple as a phase ("io") and as a state ("host-io").
# tests/analysis/test_palette.py checks it.

#: Colour of each trace phase ('' = a record with no phase).
PHASE_COLOURS: dict[str, str] = {
    "fwd": "#1f77b4",  # blue
    "bwd": "#ff7f0e",  # orange
    "accumulate": "#2ca02c",  # green
    "weight-update": "#d62728",  # red
    "io": "#9467bd",  # purple
    "host": "#8c564b",  # brown
    "": "#7f7f7f",  # grey
}

#: Legend label of each phase.
PHASE_LABELS: dict[str, str] = {phase: phase or "other" for phase in TRACE_PHASES}

#: Colour of each IPU state of a utilisation report (the state tracks, then idle).
STATE_COLOURS: dict[str, str] = {
    "compute": "#17becf",  # cyan
    "exchange": "#bcbd22",  # olive
    "sync": "#e377c2",  # pink
    "host-io": "#9467bd",  # purple, as the "io" phase
    "link": "#393b79",  # indigo
    "remote": "#8c6d31",  # ochre
    "idle": "#eeeeee",  # light grey
}

#: Colour of each memory category.
CATEGORY_COLOURS: dict[str, str] = {
    "weights": "#aec7e8",  # light blue
    "optimizer-state": "#ffbb78",  # light orange
    "gradient-accumulators": "#98df8a",  # light green
    "activations": "#ff9896",  # light red
    "code": "#c5b0d5",  # light purple
    "exchange-buffers": "#dbdb8d",  # light olive
    "stash": "#f7b6d2",  # light pink
    "temporaries": "#c49c94",  # light brown
}

#: Meanings that share a colour on purpose: (palette, key) pairs of one colour.
SHARED_MEANINGS = ({("phase", "io"), ("state", "host-io")},)

#: Colour of the bars of a tile histogram (tiles hold memory: a memory-palette neighbour).
TILE_COLOUR = "#6b6ecf"
#: Colour of budget lines (SRAM of an IPU or of a tile).
BUDGET_COLOUR = "#b2182b"
#: Colour of the lines separating the rows of one IPU from the next in a timeline.
SEPARATOR_COLOUR = "#bbbbbb"
#: Edge colour of the note boxes on figures.
NOTE_EDGE_COLOUR = "#cccccc"
#: Validation figure: the points, the y = x line and the ±15% band.
POINT_COLOUR = "#000000"
REFERENCE_COLOUR = "#555555"
BAND_COLOUR = "#d9d9d9"

#: Dots per inch of PNG files.
PNG_DPI = 120
#: File formats :func:`save_figure` writes, by suffix.
FORMATS = ("png", "svg")

TITLE_SIZE = 11
LABEL_SIZE = 9
TICK_SIZE = 8
NOTE_SIZE = 7.5

#: Colour of anything without one above (a phase, state or category added to ipusim later).
FALLBACK_COLOUR = "#7f7f7f"


def new_figure(width_in: float, height_in: float) -> Figure:
    """A figure with an Agg canvas and constrained layout (no pyplot state).

    Args:
        width_in: width (inches).
        height_in: height (inches).
    """
    fig = Figure(figsize=(width_in, height_in), layout="constrained", dpi=PNG_DPI)
    FigureCanvasAgg(fig)
    return fig


def file_format(path: str | os.PathLike[str]) -> str:
    """The format (``"png"`` or ``"svg"``) named by the suffix of ``path``.

    Raises:
        ValueError: if the suffix is not ``.png`` or ``.svg``.
    """
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(
            f"path must end in one of {tuple('.' + f for f in FORMATS)}; got {str(path)!r}; "
            f"the suffix chooses the file format"
        )
    return fmt


def save_figure(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` to ``path`` (PNG or SVG, from the suffix), creating missing folders.

    Returns:
        The path written.

    Raises:
        ValueError: if the suffix is not ``.png`` or ``.svg``.
    """
    fmt = file_format(path)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt))
    return path


def _metadata(fmt: str) -> dict[str, str | None]:
    # No creation date, so a figure of the same data writes the same SVG bytes.
    return {"Date": None} if fmt == "svg" else {}


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit for a time axis covering ``span_s`` seconds: ``(name, seconds per unit)``.

    ``s`` from 1 s, ``ms`` from 1 ms, ``µs`` from 1 µs, ``ns`` below.
    """
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if span_s >= scale:
            return name, scale
    return "ns", 1e-9


def rate_unit(flops_per_s: float) -> tuple[str, float]:
    """The unit for FLOP rates up to ``flops_per_s``: ``(name, FLOP/s per unit)``."""
    for name, scale in (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6), ("kFLOP/s", 1e3)):
        if flops_per_s >= scale:
            return name, scale
    return "FLOP/s", 1.0


def style_axes(ax: Axes) -> None:
    """Tick sizes and a light grid, as in ``bench/`` figures."""
    ax.tick_params(labelsize=TICK_SIZE)
    ax.grid(alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)
