"""The registry of doc figures, where their data lives and how they are written."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ipusim._files import write_text_atomic

ROOT = Path(__file__).resolve().parents[2]
#: Where the figures and their data live.
IMAGES = ROOT / "docs" / "images"

#: A run: the plotted tables by figure name, and whatever the drawing needs (a report ...).
Run = tuple[dict[str, pd.DataFrame], Any]


@dataclass(frozen=True)
class Artefact:
    """One or more figures made from one simulation.

    Attributes:
        name: the artefact's name (``python -m docs.build NAME``).
        figures: the PNG stems it writes in ``docs/images``, each with a ``STEM.csv`` of its data.
        run: simulates; returns ``(tables by figure stem, context)``.
        draw: draws ``figures`` from ``(tables, context)`` into a folder.
        cheap: whether the docs test regenerates it (a few seconds) or only a slow test does.
    """

    name: str
    figures: tuple[str, ...]
    run: Callable[[], Run]
    draw: Callable[[Mapping[str, pd.DataFrame], Any, Path], None]
    cheap: bool


def data_path(figure: str, folder: Path = IMAGES) -> Path:
    """The CSV of the series plotted in ``figure`` (a PNG stem of ``docs/images``)."""
    return folder / f"{figure}.csv"


def table_text(table: pd.DataFrame) -> str:
    """A table as the committed CSV holds it (floats at full precision, so equal means equal)."""
    return table.to_csv(index=False, lineterminator="\n")


def quiet_run(run: Callable[[], Run]) -> Run:
    """``run()`` as in a fresh process (Keras' layer-name counters and seed stream reset, so op
    names do not depend on what ran before), its printing swallowed."""
    from ipusim import keras

    keras.backend.clear_session()
    with contextlib.redirect_stdout(io.StringIO()):
        return run()


def build(names: list[str] | None = None, folder: Path = IMAGES) -> list[Path]:
    """Simulate and write the figures and data of ``names`` (default all) into ``folder``."""
    from docs.build.registry import by_name

    written = []
    for artefact in by_name(names):
        tables, context = quiet_run(artefact.run)
        for figure in artefact.figures:
            path = data_path(figure, folder)
            write_text_atomic(path, table_text(tables[figure]))
            written.append(path)
        artefact.draw(tables, context, folder)
        written += [folder / f"{figure}.png" for figure in artefact.figures]
    return written
