"""The long runs of issue 24's round-trip properties and file fuzz, with a summary line each.

Runs, each in its own pytest process with the example / case count raised:

- ``tests/keras/test_round_trip_property.py`` (save and load; ``--examples``, default 10,000);
- ``tests/serving/test_export_round_trip_property.py`` (export, load, serve; same count);
- ``tests/keras/test_model_file_fuzz.py`` and ``tests/serving/test_export_fuzz.py``
  (``--fuzz`` cases per file and damage, default 1,000).

A property stops at its first failing example (Hypothesis then shrinks it and prints it); a
fuzz test counts every non-IPUSimError and prints them. Writes ``bench/results/round_trip.json``
(per run: the command, pass / fail, wall seconds, pytest's last line).

Run: ``python bench/round_trip.py [--examples 10000] [--fuzz 1000] [--only keras,serving,fuzz]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ipusim._files import write_text_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "keras": ["tests/keras/test_round_trip_property.py"],
    "serving": ["tests/serving/test_export_round_trip_property.py"],
    "fuzz": ["tests/keras/test_model_file_fuzz.py", "tests/serving/test_export_fuzz.py"],
}


def _run(name: str, files: list[str], env: dict[str, str]) -> dict[str, object]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-s", *files]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    result = {
        "run": name,
        "command": " ".join(command[1:]),
        "passed": done.returncode == 0,
        "seconds": round(time.monotonic() - start, 1),
        "last_line": lines[-1] if lines else done.stderr[-300:],
    }
    if done.returncode != 0:
        result["output_tail"] = "\n".join(lines[-60:])
    print(f"{name}: {'PASS' if result['passed'] else 'FAIL'} in {result['seconds']} s: "
          f"{result['last_line']}", flush=True)  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--fuzz", type=int, default=1_000)
    parser.add_argument("--only", default="keras,serving,fuzz")
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "IPUSIM_ROUNDTRIP_EXAMPLES": str(args.examples),
        "IPUSIM_FUZZ_CASES": str(args.fuzz),
    }
    results = [_run(name, RUNS[name], env) for name in args.only.split(",")]
    out = ROOT / "bench" / "results" / "round_trip.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"examples": args.examples, "fuzz_cases": args.fuzz, "runs": results}
    write_text_atomic(out, json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
