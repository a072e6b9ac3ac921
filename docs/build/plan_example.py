"""The worked examples of docs/planning.md (BERT-Large on a POD16 and on a POD64): each section,
between ``<!-- plan-example SYSTEM -->`` and ``<!-- /plan-example SYSTEM -->``, is the command,
the table it prints and the files it writes, produced by running the command.

``python -m docs.build.plan_example`` rewrites the sections; ``tests/plan/test_plan_docs.py``
runs the commands and fails when a section is not what they print (after the planner's
estimates change, regenerate).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import tempfile
from pathlib import Path

from docs.build.artefacts import ROOT

PLANNING_MD = ROOT / "docs" / "planning.md"
#: System and global batch of each example (B1's 4 replicas x 5 stages shape; 80 | batch).
EXAMPLES = {"POD16": 1280, "POD64": 5120}
#: Simulations per example: enough for fitting plans, few enough for a test. The example has no
#: time budget (``--budget-s inf``): what it prints must not depend on the machine's speed.
CANDIDATES = 10


def command(system: str) -> str:
    """The example's command line."""
    return (
        'ipusim plan --workload bert --workload-args "--size large --sequence 128" '
        f"--system {system} --global-batch {EXAMPLES[system]} --candidates {CANDIDATES} "
        f"--budget-s inf -o {system.lower()}"
    )


def run(system: str) -> tuple[str, list[str]]:
    """Run the example's command in a scratch folder: the table it prints (without the line of
    wall seconds) and the files it writes."""
    from ipusim.cli import main

    argv = shlex.split(command(system))[1:]
    with tempfile.TemporaryDirectory() as tmp:
        out = io.StringIO()
        with contextlib.chdir(tmp), contextlib.redirect_stdout(out):
            code = main(argv)
        if code != 0:
            raise RuntimeError(f"{command(system)} exited with {code}")
        folder = Path(tmp) / system.lower()
        files = sorted(str(p.relative_to(tmp)) for p in folder.rglob("*") if p.is_file())
    lines = out.getvalue().rstrip("\n").split("\n")
    return "\n".join(lines[:-1]), files


def section(system: str) -> str:
    """The markdown of one example, as the command gives it."""
    table, files = run(system)
    return (
        f"```bash\n{command(system)}\n```\n\nprints (fitting plans first, fastest first; the last "
        f"line, with the search's wall time, left out):\n\n```text\n{table}\n```\n\nand writes "
        + ", ".join(f"`{f}`" for f in files)
        + ".\n"
    )


def _span(system: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- plan-example {system} -->\n)(.*?)(<!-- /plan-example {system} -->)", re.S
    )


def quoted(system: str, doc: Path = PLANNING_MD) -> str:
    """The section the page holds for ``system`` ('' when missing)."""
    found = _span(system).search(doc.read_text(encoding="utf-8"))
    return found[2] if found else ""


def write(doc: Path = PLANNING_MD) -> None:
    """Rewrite every example section of ``doc`` from its command (atomically)."""
    from ipusim._files import write_text_atomic

    text = doc.read_text(encoding="utf-8")
    for system in EXAMPLES:
        body = section(system)
        text, n = _span(system).subn(lambda m, b=body: m[1] + b + m[3], text)
        if n != 1:
            raise ValueError(f"{doc.name}: no <!-- plan-example {system} --> section")
    write_text_atomic(doc, text)


if __name__ == "__main__":
    write()
    sys.exit(0)
