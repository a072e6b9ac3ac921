"""The README's BERT-Large POD16 study: throughput and pipeline bubble against accumulation for
the three schedules (``python -m analysis.studies.bert_pod16``), run in this process.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from docs.build.artefacts import Run

#: docs/images stem -> (the study's figure file, the column it plots).
FIGURES = {
    "bert_pod16_throughput": ("throughput.png", "throughput_samples_per_s"),
    "bert_pod16_bubble": ("bubble.png", "bubble"),
}


def run() -> Run:
    """Every configuration of the study, one after another in this process."""
    from analysis.studies import bert_pod16
    from ipusim.sweep import run_sweep

    with tempfile.TemporaryDirectory() as tmp:
        df = run_sweep(bert_pod16.study(), Path(tmp), jobs=1, progress=False, resume=False)
    keys = ["schedule", "accumulation"]
    tables = {
        stem: df[[*keys, column]].sort_values(keys).reset_index(drop=True)
        for stem, (_, column) in FIGURES.items()
    }
    return tables, df


def draw(tables: Mapping[str, pd.DataFrame], df: Any, folder: Path) -> None:
    """The study's own figures, copied under their docs/images names."""
    from analysis.studies import bert_pod16

    with tempfile.TemporaryDirectory() as tmp:
        bert_pod16.draw(df, Path(tmp))
        for stem, (name, _) in FIGURES.items():
            shutil.copyfile(Path(tmp) / name, folder / f"{stem}.png")
