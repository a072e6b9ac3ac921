"""Engine speed and memory: the compiled fast path against SimPy, and the peak RSS of long runs.

1. **Backends.** The same lowered programs run on both engines (full detail): the seed MLP
   (784-256-128-10, batch 32, Adam) on one GC200, 2,000 steps in executions of 100, and a
   4-stage Grouped pipeline (200 supersteps per stage pass, 16 micro-batches per weight update,
   copies and syncs between stages, 4 replicas) for 100 weight updates. Wall time of the engine
   call alone (lowering done before), SimPy events, and the ratio; the end times and traces must
   be identical.
2. **Memory.** The seed MLP timing-only at 10^3, 10^4 and 10^5 steps (executions of 100), each
   a fresh process with its summary report: peak RSS (median of repeats). Target (issue 14): the
   10^5-step run within 1.5x of the 10^3-step run.

Run: ``python bench/bench_engine.py [--repeats N]`` (writes bench/results/engine.json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ipusim import session
from ipusim.engine import RunPlan, simulate
from ipusim.hardware import load_system
from ipusim.keras.extensions.simulation import step_description
from ipusim.lowering.program import Block, PipelineProgram, Program, StageProgram, Superstep, Timed

sys.path.insert(0, str(Path(__file__).parent))
from _process import measure  # noqa: E402
from _timing import markdown_table, traced_seed_mlp  # noqa: E402

STEPS, SPE = 2000, 100


def seed_mlp_run() -> session.LoweredRun:
    model, step = traced_seed_mlp()
    description = session.RunDescription(step=step_description(model, step))
    return session.lower(description, None, load_system("IPU"))


def pipeline_program() -> Program:
    def block(stage: int, phase: str, ps: int) -> Block:
        steps = tuple(
            Superstep(f"s{stage}/{phase}{k}", f"layer{k % 7}", "matmul", phase, ps, ps // 4, 300)
            for k in range(200)
        )
        return Block(steps, f"stage {stage} {phase}")

    stages = tuple(
        StageProgram(
            s,
            s,
            block(s, "fwd", 40_000),
            block(s, "bwd", 80_000),
            block(s, "weight-update", 5_000),
            send_forward_bytes=1 << 20,
            send_backward_bytes=1 << 20,
            update_before=(Timed("all-reduce gradients", "link", 9_000_000, 1 << 26),),
        )
        for s in range(4)
    )
    pipeline = PipelineProgram(
        stages,
        "grouped",
        16,
        True,
        sync_ps=30_000,
        link_bytes_per_s=30e9,
        infeed_bytes=4096,
        outfeed_bytes=8,
    )
    return Program("train", pipeline, batch_size=4, replicas=4, ipus_per_replica=4)


def time_backends(name: str, program: Program, plan: RunPlan, host, link) -> dict:
    row: dict = {"program": name}
    results = {}
    for engine in ("fast", "simpy"):
        simulate(program, RunPlan(plan.executions[:1]), host, link, engine=engine)  # warm up
        start = time.perf_counter()
        results[engine] = simulate(program, plan, host, link, engine=engine, detail="full")
        row[f"{engine}_s"] = time.perf_counter() - start
    fast, slow = results["fast"], results["simpy"]
    if fast.end_ps != slow.end_ps or fast.trace != slow.trace:
        raise AssertionError(f"{name}: the fast path and SimPy disagree")
    row.update(
        steps=plan.total_steps,
        records=len(fast.trace),
        simpy_events=slow.events,
        speedup=row["simpy_s"] / row["fast_s"],
        simulated_s=fast.end_ps / 1e12,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats

    memory = []  # first, while this process is small
    for steps in (1_000, 10_000, 100_000):
        run = measure(["mlp", str(steps), str(SPE)], repeats)
        memory.append(
            {
                "steps": steps,
                "wall_s_median": run.wall_s,
                "peak_rss_mib_median": run.rss_bytes / 2**20,
                "peak_rss_mib": [r / 2**20 for r in run.peak_rss_bytes],
            }
        )
    mlp = seed_mlp_run()
    pipeline = pipeline_program()
    system = load_system("POD16")
    feeds = session.FeedOptions()
    backends = [
        time_backends(
            "seed MLP, 1 IPU", mlp.program, RunPlan((SPE,) * (STEPS // SPE)), mlp.host, mlp.link
        ),
        time_backends(
            "4-stage pipeline x 4 replicas",
            pipeline,
            RunPlan((16,) * 100),
            session.host_options(None, system, feeds, "grouped", 4),
            session.host_link(system, pipeline),
        ),
    ]
    growth = memory[-1]["peak_rss_mib_median"] / memory[0]["peak_rss_mib_median"]
    out = {"backends": backends, "memory": memory, "rss_growth_1e3_to_1e5": growth}
    (Path(__file__).parent / "results" / "engine.json").write_text(json.dumps(out, indent=2))
    print(
        markdown_table(
            ["program", "steps", "records", "SimPy events", "SimPy s", "fast s", "speed-up"],
            [
                [
                    r["program"],
                    f"{r['steps']:,}",
                    f"{r['records']:,}",
                    f"{r['simpy_events']:,}",
                    f"{r['simpy_s']:.3f}",
                    f"{r['fast_s']:.4f}",
                    f"{r['speedup']:,.0f}x",
                ]
                for r in backends
            ],
        )
    )
    print()
    print(
        markdown_table(
            ["seed MLP steps", "median wall s", "median peak RSS MiB"],
            [
                [f"{m['steps']:,}", f"{m['wall_s_median']:.2f}", f"{m['peak_rss_mib_median']:.0f}"]
                for m in memory
            ],
        )
    )
    print(f"\npeak RSS growth from 10^3 to 10^5 steps: {growth:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
