"""``ipusim plan``: the command line of the planner."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ipusim.errors import ConfigurationError

__all__ = [
    "add_arguments",
    "add_run_plan_arguments",
    "global_batches",
    "main_plan",
    "main_run_plan",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The planner's arguments."""
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--workload", help="a registered workload (bert, resnet50)")
    what.add_argument(
        "--model",
        help="module:function returning a compiled Keras model (built in an IPUStrategy scope)",
    )
    p.add_argument(
        "--workload-args",
        default="",
        help="arguments that fix the model, as on the workload's command line "
        '(e.g. "--size large --sequence 128")',
    )
    p.add_argument("--system", required=True, help="system preset (POD16, Bow-POD16 ...)")
    p.add_argument(
        "--global-batch",
        type=global_batches,
        required=True,
        help="samples per weight update: N, a list N1,N2,... or a range A:B (A, 2A, 4A ... up "
        "to B), searched together",
    )
    p.add_argument("--precision", default="fp16.16", choices=["fp32", "fp16.16", "fp16.32"])
    _add_inference(p)
    p.add_argument("--budget-s", type=float, default=60.0, help="search time budget (s)")
    p.add_argument("--candidates", type=int, default=None, help="at most this many simulations")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "-j", "--jobs", type=int, default=1, help="finalists simulated at once (worker processes)"
    )
    p.add_argument(
        "--scheduler", default=None, help="Dask scheduler address: simulate the finalists there"
    )
    p.add_argument("-o", "--output", required=True, help="folder for plans.csv, best.toml, best.py")


def _add_inference(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--inference",
        action="store_true",
        help="plan model.predict (forward only: no accumulation, optimizer state or "
        "recomputation); --global-batch is then the samples of one device step over all "
        "replicas (micro-batch x replicas)",
    )
    p.add_argument(
        "--evaluate",
        action="store_true",
        help="plan model.evaluate (the forward pass and the loss; implies --inference)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="with --inference: the dataset's samples, which bound the device iterations "
        "(steps_per_execution) searched (default: 64 device steps; a script's predict call "
        "gives its own)",
    )
    p.add_argument(
        "--max-latency-s",
        type=float,
        default=None,
        help="with --inference: the most seconds one execution may take (the host gets its "
        "outputs when it ends)",
    )


def _inference(args: argparse.Namespace) -> bool | str:
    """``plan``'s ``inference``: False, True (predict) or "evaluate"."""
    return "evaluate" if args.evaluate else bool(args.inference)


def global_batches(text: str) -> list[int]:
    """``"512"``, ``"256,512"`` or ``"256:2048"`` (256, 512, 1024, 2048) as global batches.

    Raises:
        ConfigurationError: not positive integers, or a range whose end is below its start.
    """
    try:
        if ":" in text:
            low, high = (int(part) for part in text.split(":"))
            batches = [low * 2**k for k in range(64) if low * 2**k <= high] if low > 0 else []
        else:
            batches = [int(part) for part in text.split(",")]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1:
        raise ConfigurationError(
            f"--global-batch takes N, N1,N2,... or A:B (positive, A <= B); got {text!r}"
        )
    return batches


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

    return _print(
        plan(
            args.model or args.workload,
            args.system,
            args.global_batch,
            workload_args=parse_workload_args(args.workload_args),
            precision=args.precision,
            budget_s=args.budget_s,
            candidates=args.candidates,
            seed=args.seed,
            output=args.output,
            jobs=args.jobs,
            scheduler=args.scheduler,
            inference=_inference(args),
            samples=args.samples,
            max_latency_s=args.max_latency_s,
        ),
        args.output,
    )


def add_run_plan_arguments(p: argparse.ArgumentParser) -> None:
    """``ipusim run --plan``'s options (the script and ``--system`` are ``run``'s own)."""
    p.add_argument(
        "--plan",
        action="store_true",
        help="plan the model SCRIPT trains at its first fit (or --plan-fit N) instead of "
        "training it (stops there; needs --system and --global-batch; -o is the planner's "
        "folder; best.toml names the script, so ipusim validate --folder re-runs it); with "
        "--inference (--evaluate), the script stops at its first fit or predict (evaluate) call",
    )
    p.add_argument(
        "--global-batch",
        type=global_batches,
        default=None,
        help="with --plan: samples per weight update (N, N1,N2,... or A:B)",
    )
    p.add_argument("--budget-s", type=float, default=60.0, help="with --plan: search budget (s)")
    p.add_argument("--candidates", type=int, default=None, help="with --plan: most simulations")
    _add_inference(p)
    p.add_argument(
        "--plan-fit",
        type=int,
        default=1,
        help="with --plan: plan the model of the script's Nth fit() call (default 1: the first; "
        "the fits before it run, none after); with --inference, its Nth fit or predict "
        "(evaluate) call, whichever comes first",
    )


def main_run_plan(args: argparse.Namespace, tail: list[str]) -> int:
    """``ipusim run --plan ... SCRIPT``: capture the model of the script's ``--plan-fit``-th fit
    (with ``--inference``, of its first fit or predict / evaluate call), then plan it under its
    script reference (which ``best.toml`` names, so ``ipusim validate`` re-runs the script up
    to that call in its own process)."""
    from ipusim.plan.script import capture, script_reference
    from ipusim.plan.search import plan
    from workloads.keras_model import register

    if args.system is None or args.global_batch is None:
        raise ConfigurationError(
            "ipusim run --plan needs --system and --global-batch (e.g. --system POD16 "
            "--global-batch 1024)"
        )
    inference = _inference(args)
    calls = ("fit", "evaluate" if inference == "evaluate" else "predict") if inference else ("fit",)
    got = capture(args.script, tail, args.system, args.plan_fit, calls)
    model = got.model
    reference = register(
        script_reference(args.script, tail, args.plan_fit, got.call), lambda: model
    )
    print(
        f"ipusim run --plan: planning the model {model.name!r} of {got.call}() number "
        f"{args.plan_fit} of {args.script} (the script stopped there; --plan-fit N plans "
        "another call's model)",
        file=sys.stderr,
    )
    output = args.output or f"ipusim_plan/{Path(args.script).stem}"
    result = plan(
        reference,
        args.system,
        args.global_batch,
        budget_s=args.budget_s,
        candidates=args.candidates,
        output=output,
        inference=inference,
        samples=args.samples if args.samples is not None else got.samples,
        max_latency_s=args.max_latency_s,
    )
    return _print(result, output)


def _print(result: Any, output: str) -> int:
    """The ranked table's top and the search's figures, on stdout."""
    cols = ["summary", "throughput", "memory_used", "fits", "bottleneck"]
    cols += ["latency_s"] if "latency_s" in result.table else []
    print(result.table[cols].head(10).to_string(index=False))
    print(
        f"{result.estimated} candidates estimated, {result.simulated} simulated in "
        f"{result.seconds:.1f} s; written to {output}"
    )
    return 0
