"""``ipusim plan``: the command line of the planner."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from ipusim.errors import ConfigurationError

__all__ = ["add_arguments", "main_plan"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The planner's arguments."""
    p.add_argument("--workload", required=True, help="a registered workload (bert)")
    p.add_argument(
        "--workload-args",
        default="",
        help="arguments that fix the model, as on the workload's command line "
        '(e.g. "--size large --sequence 128")',
    )
    p.add_argument("--system", required=True, help="system preset (POD16, Bow-POD16 ...)")
    p.add_argument("--global-batch", type=int, required=True, help="samples per weight update")
    p.add_argument("--precision", default="fp16.16", choices=["fp32", "fp16.16", "fp16.32"])
    p.add_argument("--budget-s", type=float, default=60.0, help="search time budget (s)")
    p.add_argument("--candidates", type=int, default=None, help="at most this many simulations")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--processes", type=int, default=1, help="simulate finalists on N local processes"
    )
    p.add_argument("--dask", default=None, help="simulate finalists on this Dask scheduler")
    p.add_argument("-o", "--output", required=True, help="folder for plans.csv, best.toml, best.py")


def parse_workload_args(text: str) -> dict[str, Any]:
    """``"--size large --sequence 128"`` as ``{"size": "large", "sequence": 128}``."""
    out: dict[str, Any] = {}
    words = shlex.split(text)
    key = None
    for word in words:
        if word.startswith("--"):
            key = word[2:]
            out[key] = True
        elif key is None:
            raise ConfigurationError(
                f"--workload-args must be --NAME VALUE pairs, got {word!r} before any --NAME"
            )
        else:
            out[key] = int(word) if word.lstrip("-").isdigit() else word
            key = None
    return out


def main_plan(args: argparse.Namespace) -> int:
    """Run the search and print the ranked table."""
    from ipusim.plan.search import plan

    result = plan(
        args.workload,
        args.system,
        args.global_batch,
        workload_args=parse_workload_args(args.workload_args),
        precision=args.precision,
        budget_s=args.budget_s,
        candidates=args.candidates,
        seed=args.seed,
        output=args.output,
        processes=args.processes,
        dask=args.dask,
    )
    cols = ["summary", "throughput", "memory_used", "fits", "bottleneck"]
    print(result.table[cols].head(10).to_string(index=False))
    print(
        f"{result.estimated} candidates estimated, {result.simulated} simulated in "
        f"{result.seconds:.1f} s; written to {args.output}"
    )
    return 0
