"""The fast path's module (and Numba with it) loads only when a run takes the fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys
from ipusim.engine import HostLink, HostOptions, RunPlan, simulate
from ipusim.engine.simulator import AUTO_FAST_MIN_INSTANCES
from ipusim.lowering.program import Block, PipelineProgram, Program, StageProgram, Superstep
stage = StageProgram(0, 0, Block((Superstep("a", "", "a", "fwd", 10, 0, 0),)))
program = Program("predict", PipelineProgram((stage,), "sequential", 1, False), batch_size=2)
link = HostLink(1e12, 1e12, 0)
seen = {}
short = simulate(program, RunPlan((4,)), HostOptions(), link)
seen["short"] = [short.engine, "ipusim.engine.fast" in sys.modules, "numba" in sys.modules]
long = simulate(program, RunPlan((AUTO_FAST_MIN_INSTANCES,)), HostOptions(), link, detail="summary")
seen["long"] = [long.engine, "ipusim.engine.fast" in sys.modules, "numba" in sys.modules]
print(json.dumps(seen))
"""


def test_a_short_run_loads_neither_the_fast_path_nor_numba():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, check=True
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["short"] == ["simpy", False, False]
    assert seen["long"] == ["fast", True, True]  # every step runs at least one block instance
