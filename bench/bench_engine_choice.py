"""What a short timing-only run spends on each engine, to choose ``engine="auto"``'s rule.

Each measurement is a fresh interpreter running the MNIST CNN workload (``tests/workloads``)
timing-only for ``N`` steps with ``--engine fast`` or ``--engine simpy`` (Numba's cache warm:
one run of each first). The child times the session's engine call (the first one of the
process, so loading the fast path's compiled code is inside it) and then the same call again
(the compiled code loaded: the work alone), and its whole wall time. Medians of ``--repeats``.

``auto`` is measured too (``--engines``), so a checkout's automatic choice can be compared
with another's (before / after a change of the rule). Also records ``python -X importtime -c "import ipusim.engine"`` (cumulative microseconds of
``ipusim.engine`` and of ``ipusim.engine.fast``, 0 when it is not imported) and whether Numba
is loaded before the first engine call.

Run: ``python bench/bench_engine_choice.py [--repeats 5] [--path CHECKOUT] [--label NAME]``
(``--path`` puts another checkout first on PYTHONPATH, e.g. main; writes
bench/results/engine_choice[_NAME].json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = (10, 100, 1000, 3000, 6000, 10000)
CHILD = r"""
import contextlib, io, json, sys, time
start = time.perf_counter()
sys.path.insert(0, sys.argv[3])
import ipusim.session.run as run
calls, instances = [], []
engine_call = run.run_engine
def timed(*args, **kwargs):
    numba = "numba" in sys.modules
    if not calls:
        from ipusim.engine.recorder import execution_sizes
        from ipusim.engine.tables import compile_program
        sizes = execution_sizes(compile_program(args[0], args[2], args[3]), args[1])
        instances.append(int(sizes[1].sum()))
    t = time.perf_counter()
    result = engine_call(*args, **kwargs)
    calls.append((time.perf_counter() - t, result.engine, numba))
    if len(calls) == 1:  # the same call again: the compiled code loaded
        t = time.perf_counter()
        engine_call(*args[:4], None, **kwargs)  # no progress bar to advance twice
        calls.append((time.perf_counter() - t, result.engine, numba))
    return result
run.run_engine = timed
from workloads import mnist_cnn
argv = f"--timing-only --steps {sys.argv[2]} --micro-batch 32 --engine {sys.argv[1]}".split()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    mnist_cnn.main(argv)
import ipusim
print(json.dumps({"ipusim": ipusim.__file__, "first_s": calls[0][0], "again_s": calls[1][0], "engine": calls[0][1],
                  "numba_before": calls[0][2], "instances": instances[0], "wall_s": time.perf_counter() - start}))
"""


def _env(path: str | None) -> dict[str, str]:
    env = dict(os.environ)
    first = path or str(ROOT)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (first, env.get("PYTHONPATH", "")) if p)
    return env


def _child(env: dict[str, str], engine: str, steps: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, engine, str(steps), str(ROOT / "tests")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tempfile.gettempdir(),  # not a checkout: PYTHONPATH decides which ipusim runs
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _importtime(env: dict[str, str]) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import ipusim.engine"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd="/",
    )
    found = {"ipusim.engine": 0, "ipusim.engine.fast": 0, "numba": 0}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", line)
        if match and match[2] in found:
            found[match[2]] = int(match[1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--path", default=None)
    parser.add_argument("--label", default="")
    parser.add_argument("--engines", default="fast,simpy,auto", help="comma-separated")
    args = parser.parse_args()
    env = _env(args.path)
    engines = args.engines.split(",")
    for engine in ("fast", "simpy"):
        _child(env, engine, 10)  # warm Numba's cache
    imports = [_importtime(env) for _ in range(args.repeats)]
    rows = []
    for steps in STEPS:
        runs = {e: [_child(env, e, steps) for _ in range(args.repeats)] for e in engines}
        first = runs[engines[0]][0]
        row: dict = {"steps": steps, "instances": first["instances"], "ipusim": first["ipusim"]}
        for engine, found in runs.items():
            row[f"{engine}_ran"] = sorted({r["engine"] for r in found})
            for key in ("first_s", "again_s", "wall_s"):
                row[f"{engine}_{key}"] = statistics.median(r[key] for r in found)
            row[f"{engine}_numba_before"] = all(r["numba_before"] for r in found)
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {
        "checkout": args.path or str(ROOT),
        "repeats": args.repeats,
        "importtime_us_median": {k: statistics.median(i[k] for i in imports) for k in imports[0]},
        "rows": rows,
    }
    name = f"engine_choice{'_' + args.label if args.label else ''}.json"
    out = ROOT / "bench" / "results" / name
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(out)


if __name__ == "__main__":
    main()
