"""``python -m docs.build [NAME ...]``: regenerate doc figures and their data (see the package)."""

from __future__ import annotations

import argparse
import sys

from docs.build.artefacts import build
from docs.build.registry import ARTEFACTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.build", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"artefacts (default all): {sorted(ARTEFACTS)}")
    parser.add_argument("--list", action="store_true", help="list the artefacts and stop")
    args = parser.parse_args(argv)
    if args.list:
        for a in ARTEFACTS.values():
            print(f"{a.name:20s} {'cheap' if a.cheap else 'slow '}  {', '.join(a.figures)}")
        return 0
    try:
        written = build(args.names)
    except ValueError as error:
        print(f"python -m docs.build: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
