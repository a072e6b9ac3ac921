"""The planner's files: ``plans.csv`` (ranked table), ``best.toml`` (a validation row that
``ipusim validate --folder DIR`` re-runs), ``best.py`` (the options to paste),
``sweep/plans.toml`` (the fitting plans as a study ``ipusim sweep`` re-runs; in a folder of its
own, since ``validate --folder`` reads every TOML file beside ``best.toml``) and ``plan.png`` (throughput against
IPUs per replica and memory headroom)."""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipusim._files import write_bytes_atomic, write_text_atomic

if TYPE_CHECKING:
    from ipusim.plan.search import PlanResult

__all__ = [
    "best_toml",
    "config_py",
    "io_tiles_py",
    "ipus_per_replica",
    "script_of",
    "stages_py",
    "sweep_toml",
    "write_outputs",
]

#: Fitting plans written to the study file ``sweep/plans.toml``, best first.
SWEEP_PLANS = 10


def io_tiles_py(args: dict[str, Any]) -> list[str]:
    """The IPUConfig lines of a plan's I/O tiles: both options, since without
    ``place_ops_on_io_tiles`` IPU TensorFlow reserves the tiles but places nothing on them."""
    if not args.get("io-tiles"):
        return []
    return [
        f"config.io_tiles.num_io_tiles = {args['io-tiles']}",
        "config.io_tiles.place_ops_on_io_tiles = True",
    ]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + "}"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def script_of(args: dict[str, Any]) -> str:
    """Which fit of which script the plan's model is (``ipusim run --plan``), or ""."""
    from ipusim.plan.script import parse_reference

    script = parse_reference(str(args.get("model", "")))
    if script is None:
        return ""
    return f"the model of {script.call}() number {script.number} of " + shlex.join(
        [script.path, *script.args]
    )


def _model_note(args: dict[str, Any]) -> str:
    """``best.toml``'s note on how its model is rebuilt, for a Keras model's plan ("" else)."""
    if script_of(args):
        return f"{script_of(args)} (ipusim run --plan): re-running runs the script up to that call"
    if "model" in args and ":" not in str(args["model"]):
        return (
            "the model was given to ipusim.plan as an object or function, known only to the "
            "planning process: to re-run this row elsewhere, plan its function as module:function"
        )
    return ""


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
    ]
    if _model_note(args):
        lines.append(f"notes = {_toml_value(_model_note(args))}")
    lines += ["", "[args]"]
    lines += [f'"{k}" = {_toml_value(v)}' for k, v in args.items()]
    return "\n".join(lines) + "\n"


#: ``schedule`` and ``recomputation-mode`` arguments as IPU TensorFlow names them.
_SCHEDULES = {"grouped": "Grouped", "interleaved": "Interleaved", "sequential": "Sequential"}
_RECOMPUTATION = {
    "auto": "Auto",
    "then": "RecomputeThenBackpropagate",
    "interleaved": "RecomputeAndBackpropagateInterleaved",
}


def best_py(args: dict[str, Any]) -> str:
    """The IPUConfig, stage assignment and pipelining options of a plan, to paste into an IPU
    TensorFlow 2 script (``model`` is the Keras model built in the strategy's scope)."""
    if args.get("inference"):
        from ipusim.plan.inference import best_py as inference_py

        return inference_py(args)
    lines = config_py(args, "configuration", bool(args.get("recompute")))
    if args["stages"] > 1:
        lines += stages_py(args)
    else:
        state = (
            f", offload_weight_update_variables={args['offload'] == 'on'}, "
            f"replicated_optimizer_state_sharding={bool(args.get('sharded-optimizer-state'))}"
            if args.get("offload") in ("on", "off") and args["accumulation"] > 1
            else ""
        )
        lines.append(
            "model.set_gradient_accumulation_options("
            f"gradient_accumulation_steps_per_replica={args['accumulation']}{state})"
        )
    lines.append(f"# micro-batch (dataset batch size per replica): {args['micro-batch']}")
    return "\n".join(lines) + "\n"


def config_py(args: dict[str, Any], what: str, recompute: bool | None = None) -> list[str]:
    """The head of a plan's ``best.py``: the IPUConfig of the ``what`` to paste, with
    ``allow_recompute = recompute`` unless None (inference), configured."""
    ipr, replicas = ipus_per_replica(args), args["replicas"]
    return [
        f"# ipusim plan: the {what} to paste (IPU TensorFlow 2)",
        *([f"# for {script_of(args)}"] if script_of(args) else []),
        "from tensorflow.python import ipu",
        "",
        "config = ipu.config.IPUConfig()",
        f"config.auto_select_ipus = {ipr * replicas}  # {replicas} replicas x {ipr} IPUs",
        *([f"config.allow_recompute = {recompute}"] if recompute is not None else []),
        f"config.matmuls.poplar_options = {{'availableMemoryProportion': "
        f"'{args.get('memory-proportion', 0.6)}'}}",
        *io_tiles_py(args),
        "config.configure_ipu_system()",
        "",
    ]


def stages_py(args: dict[str, Any]) -> list[str]:
    """The stage assignment and ``set_pipelining_options`` of a pipelined plan."""
    split = args.get("split") or _bert_split(args)
    if split:
        lines = [
            f"split_after = {list(split)}  # a stage starts after each of these layers",
            "assignments = model.get_pipeline_stage_assignment()",
            "stage = 0",
            "for assignment in assignments:",
            "    assignment.pipeline_stage = stage",
            "    if stage < len(split_after) and assignment.layer.name == split_after[stage]:",
            "        stage += 1",
            "model.set_pipeline_stage_assignment(assignments)",
        ]
    else:
        lines = ["# the model's own stage assignment (get_pipeline_stage_assignment)"]
    schedule = _SCHEDULES[str(args.get("schedule", "grouped"))]
    lines += [
        "model.set_pipelining_options(",
        f"    gradient_accumulation_steps_per_replica={args['accumulation']},",
        f"    pipeline_schedule=ipu.ops.pipelining_ops.PipelineSchedule.{schedule},",
    ]
    if args.get("device-mapping"):
        lines.append(f"    device_mapping={list(args['device-mapping'])},")
    if args.get("recompute"):
        mode = _RECOMPUTATION[str(args.get("recomputation-mode", "auto"))]
        lines.append(f"    recomputation_mode=ipu.ops.pipelining_ops.RecomputationMode.{mode},")
        if _checkpoint_every(args):
            lines[:0] = [
                "# recomputation checkpoints: an ipu_tensorflow_addons.keras.layers."
                f"RecomputationCheckpoint after every {_checkpoint_every(args)} encoder layer(s) "
                "(a stage ends after its last layer's)"
            ]
    lines += [
        f"    offload_weight_update_variables={args.get('offload') == 'on'},",
        f"    replicated_optimizer_state_sharding={bool(args.get('sharded-optimizer-state'))},",
        ")",
    ]
    return lines


def _bert_split(args: dict[str, Any]) -> list[str]:
    """The layers after which a BERT plan's stages start (the workload's own split points)."""
    if not args.get("layers-per-ipu"):
        return []
    from workloads.bert import split_points

    return split_points(
        str(args.get("size", "large")),
        list(args["layers-per-ipu"]),
        args.get("ffn-per-ipu"),
        bool(args.get("heads-stage")),
        _checkpoint_every(args),
    )


def _checkpoint_every(args: dict[str, Any]) -> int:
    """Encoder layers per recomputation checkpoint of a BERT plan (0: none)."""
    return int(args.get("checkpoint-every") or args.get("checkpoint-every-layer") or 0)


def ipus_per_replica(args: dict[str, Any]) -> int:
    """IPUs one replica of a plan uses: the distinct IPUs of its device mapping, or one per
    stage without one (IPU TensorFlow's default mapping)."""
    mapping = args.get("device-mapping")
    return len(set(mapping)) if mapping else int(args.get("stages", 1))


def sweep_toml(workload: str, plans: list[dict[str, Any]]) -> str:
    """A study that re-simulates ``plans`` (their ``[args]``) with ``ipusim sweep``, one row each
    with the throughput, memory used, whether it fits and the bottleneck."""
    lines = [
        'workload = "ipusim.plan.search:sweep_plan"',
        f'name = "ipusim plan: the best {workload} plans"',
    ]
    for args in plans:
        lines += ["", "[[configs]]", f'workload = "{workload}"', f"args = {_toml_value(args)}"]
    return "\n".join(lines) + "\n"


def write_outputs(result: PlanResult, workload: str, folder: Path) -> None:
    """``plans.csv`` and ``plan.png``; ``best.toml``, ``best.py`` and ``sweep/plans.toml`` when a plan
    fits."""
    from analysis.plan import plan_figure

    folder.mkdir(parents=True, exist_ok=True)
    table = result.table.drop(columns=["args"], errors="ignore")
    write_text_atomic(folder / "plans.csv", table.to_csv(index=False))
    if len(result.table):
        figure_table = result.table.assign(
            ipus_per_replica=result.table["args"].map(ipus_per_replica)
        )
        png = io.BytesIO()
        plan_figure(figure_table, f"ipusim plan: {workload}").savefig(png, format="png")
        write_bytes_atomic(folder / "plan.png", png.getvalue())
    fitting = result.table[result.table["fits"]] if len(result.table) else result.table
    if len(fitting):
        top = fitting.iloc[0]
        args = dict(top["args"])
        write_text_atomic(folder / "best.toml", best_toml(workload, args, float(top["throughput"])))
        write_text_atomic(folder / "best.py", best_py(args))
        plans = [dict(a) for a in fitting["args"].head(SWEEP_PLANS)]
        (folder / "sweep").mkdir(exist_ok=True)
        write_text_atomic(folder / "sweep" / "plans.toml", sweep_toml(workload, plans))
