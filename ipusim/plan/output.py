"""The planner's files: ``plans.csv`` (ranked table), ``best.toml`` (a validation row that
``ipusim validate --folder DIR`` re-runs) and ``best.py`` (the options to paste)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ipusim.plan.search import PlanResult

__all__ = ["best_toml", "write_outputs"]


def _atomic_write(path: Path, text: str) -> None:
    """Write aside then rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def best_toml(workload: str, args: dict[str, Any], throughput: float) -> str:
    """A validation row of the plan; its ``measured`` is the simulated throughput (flag E)."""
    lines = [
        'id = "PLAN"',
        f'title = "ipusim plan: best {workload} configuration found"',
        f"measured = {throughput!r}",
        'flag = "E"',
        'source = "ipusim plan (the simulated throughput, not a measurement)"',
        f'workload = "{workload}"',
        'group = "plan"',
        "",
        "[args]",
    ]
    lines += [f'"{k}" = {_toml_value(v)}' for k, v in args.items()]
    return "\n".join(lines) + "\n"


def best_py(args: dict[str, Any]) -> str:
    """The IPUConfig and pipelining options of a BERT plan, to paste into an IPU TF2 script."""
    ipr = (args["stages"] - 1) if args.get("heads-stage") else args["stages"]
    replicas = args["replicas"]
    lines = [
        "# ipusim plan: the configuration to paste (IPU TensorFlow 2)",
        "from tensorflow.python import ipu",
        "",
        "config = ipu.config.IPUConfig()",
        f"config.auto_select_ipus = {ipr * replicas}  # {replicas} replicas x {ipr} IPUs",
        f"config.matmuls.poplar_options = {{'availableMemoryProportion': "
        f"'{args.get('memory-proportion', 0.6)}'}}",
        "config.configure_ipu_system()",
        "",
    ]
    if args["stages"] > 1:
        lines += [
            f"# encoder layers per IPU: {args.get('layers-per-ipu')}; the masked-token head is a",
            "# stage of its own on IPU 0 (set_pipeline_stage_assignment with these boundaries)",
            "model.set_pipelining_options(",
            f"    gradient_accumulation_steps_per_replica={args['accumulation']},",
            f"    device_mapping={args.get('device-mapping')},",
            "    pipeline_schedule=ipu.ops.pipelining_ops.PipelineSchedule.Grouped,",
        ]
        if args.get("recompute"):
            lines.append(
                "    recomputation_mode=ipu.pipelining_ops.RecomputationMode."
                "RecomputeAndBackpropagateInterleaved,"
            )
        lines += [
            "    offload_weight_update_variables=True,"
            if args.get("offload") == "on"
            else "    offload_weight_update_variables=False,",
            f"    replicated_optimizer_state_sharding={bool(args.get('sharded-optimizer-state'))},",
            ")",
        ]
    else:
        lines.append(
            "model.set_gradient_accumulation_options("
            f"gradient_accumulation_steps_per_replica={args['accumulation']})"
        )
    lines.append(f"# micro-batch (dataset batch size per replica): {args['micro-batch']}")
    return "\n".join(lines) + "\n"


def write_outputs(result: PlanResult, workload: str, folder: Path) -> None:
    """``plans.csv``, and ``best.toml`` and ``best.py`` when a plan fits."""
    folder.mkdir(parents=True, exist_ok=True)
    table = result.table.drop(columns=["args"], errors="ignore")
    _atomic_write(folder / "plans.csv", table.to_csv(index=False))
    fitting = result.table[result.table["fits"]] if len(result.table) else result.table
    if len(fitting):
        top = fitting.iloc[0]
        args = dict(top["args"])
        _atomic_write(folder / "best.toml", best_toml(workload, args, float(top["throughput"])))
        _atomic_write(folder / "best.py", best_py(args))
