"""The validation table: every calibration row of validation/rows, predicted against measured,
with the leave-one-out refits of the fitted constants (what ``ipusim validate`` prints).

Run: ``python bench/bench_validation.py`` (writes bench/results/validation.json and .md; tens of
minutes on 2 cores). ``--reduced`` runs the reduced rows CI runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ipusim._files import write_text_atomic  # noqa: E402
from validation.cli import format_table, to_json, validate  # noqa: E402
from validation.rows import load_rows  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("rows", nargs="*", help="row ids (default: all)")
    p.add_argument("--reduced", action="store_true")
    args = p.parse_args(argv)
    start = time.perf_counter()
    table = validate(load_rows(only=args.rows or None), reduced=args.reduced, log=print)
    data = to_json(table)
    data["wall_s"] = time.perf_counter() - start
    data["reduced"] = args.reduced
    suffix = "_reduced" if args.reduced else ""
    write_text_atomic(RESULTS / f"validation{suffix}.json", json.dumps(data, indent=2) + "\n")
    write_text_atomic(RESULTS / f"validation{suffix}.md", format_table(table, markdown=True) + "\n")
    print(format_table(table))


if __name__ == "__main__":
    main()
