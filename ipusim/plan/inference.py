"""Inference plans: forward-only configurations (``model.predict``) of a workload.

No backward pass, optimizer state, gradient accumulation, stash or recomputation: a candidate is
IPUs per replica and replicas, the pipeline's stage split, the micro-batch (the global batch is
the samples of one device step over all replicas: micro-batch x replicas) and, for BERT and
ResNet-50, availableMemoryProportion. Its run is ``--inference`` (``predict``) with ``steps``
micro-batches per replica in one execution (the device iterations; IPU TensorFlow's Grouped
inference pipeline overlaps S stage passes, so ``steps`` must be a multiple of the stages).

Estimates come from one forward-only reference run per (IPUs per replica, proportion), its layers
split evenly over the stages and profiled (:mod:`ipusim.plan.profile`): each unit's forward
seconds and bytes are re-balanced by :func:`best_splits` (a stage's time is its units' forward
seconds; its bytes the reference's fixed bytes plus its units' weights and share of
activations). A step of ``steps`` micro-batches takes ``steps + S - 1`` cycles of the slowest
stage plus, per micro-batch, what the reference spent besides its stages' compute (exchange,
syncs, host I/O of the outputs). The simulator judges, as for training.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ipusim.plan import profile
from ipusim.plan.partition import best_splits
from ipusim.plan.space import Candidate, fastest_first

__all__ = ["STEPS", "best_py", "inference_candidates"]

#: Micro-batches per replica of a candidate's one execution unless ``[args]`` give ``steps``
#: (E: enough that a 16-stage pipeline's fill and drain costs under a fifth; Graphcore's
#: inference examples run hundreds of device iterations per execution).
STEPS = 64
#: IPUs per replica tried (powers of two, as IPU systems are built).
IPUS_PER_REPLICA = (1, 2, 4, 8, 16)
#: Estimates above this multiple of the budget are pruned (E, as the model space's).
PRUNE_FACTOR = 1.3
#: Splits kept per reference run (the DP's best and the next best it met).
SPLITS_KEPT = 3


@dataclass(frozen=True)
class Units:
    """How a workload's layers go into pipeline stages.

    Attributes:
        names: the profile groups a stage boundary may fall between, in order.
        group: maps a Keras layer name to its profile group.
        first / last: groups always in the first / last stage (embedding, head).
        split: the ``[args]`` that cut the units at ``bounds`` (as :attr:`Split.bounds`).
        proportions: availableMemoryProportion values tried (None: the workload's default).
        extra: ``[args]`` every candidate of the workload has.
    """

    names: list[str]
    group: Callable[[str], str | None]
    first: tuple[str, ...]
    last: tuple[str, ...]
    split: Callable[[tuple[int, ...]], dict[str, Any]]
    proportions: tuple[float | None, ...]
    extra: dict[str, Any]


def _units(workload: str, args: dict[str, Any]) -> Units:
    """The :class:`Units` of ``workload`` (``bert``, ``resnet50`` or ``keras_model``)."""
    if workload == "bert":
        from ipusim.plan.space import MEMORY_PROPORTIONS, BertShape, bert_group

        layers = [f"encoder_{i}" for i in range(BertShape.of(args).layers)]

        def counts(bounds: tuple[int, ...]) -> dict[str, Any]:
            return {"layers-per-ipu": [b - a for a, b in zip(bounds, bounds[1:])]}

        return Units(layers, bert_group, ("embedding",), ("head",), counts, MEMORY_PROPORTIONS, {})
    if workload == "resnet50":
        from ipusim.plan.space_resnet import BLOCKS, MEMORY_PROPORTIONS, resnet_group

        blocks = [b.removesuffix("_out") for b in BLOCKS]
        return Units(
            blocks,
            resnet_group,
            ("stem",),
            ("head",),
            lambda bounds: {"split": [BLOCKS[b - 1] for b in bounds[1:-1]]},
            MEMORY_PROPORTIONS,
            {"eight-bit-io": True},
        )
    from ipusim.plan.space_model import layer_names

    names = layer_names(str(args["model"]), needs_loss=False)
    return Units(
        names,
        lambda layer: layer,
        (),
        (),
        lambda bounds: {"split": [names[b - 1] for b in bounds[1:-1]]},
        (None,),
        {},
    )


def inference_candidates(
    workload: str, args: dict[str, Any], num_ipus: int, global_batch: int, precision: str
) -> list[Candidate]:
    """The inference configurations of ``workload`` on ``num_ipus`` IPUs whose replicas share
    ``global_batch`` samples per device step, fastest first (estimates)."""
    units = _units(workload, args)
    steps = int(args.get("steps", STEPS))
    base = {**args, **units.extra, "inference": True, "precision": precision, "accumulation": 1}
    out: list[Candidate] = []
    for ipr in IPUS_PER_REPLICA:
        replicas = num_ipus // ipr
        if ipr > min(num_ipus, len(units.names)) or num_ipus % ipr or global_batch % replicas:
            continue
        if steps % ipr:  # the Grouped inference pipeline's depth rule
            continue
        run = {**base, "replicas": replicas, "micro-batch": global_batch // replicas}
        run.update(stages=ipr, steps=steps)
        for proportion in units.proportions:
            if proportion is not None:
                run["memory-proportion"] = proportion
            out += _pipelined(workload, units, run)
    return fastest_first(out)


def _stage_groups(units: Units, first: int, stop: int, stage: int, stages: int) -> list[str]:
    """The profile groups of stage ``stage`` of ``stages`` holding units ``first .. stop - 1``."""
    head = list(units.first) if stage == 0 else []
    return head + units.names[first:stop] + (list(units.last) if stage == stages - 1 else [])


def _pipelined(workload: str, units: Units, run: dict[str, Any]) -> list[Candidate]:
    """Splits of the units over ``run["stages"]`` IPUs, from the profile of an even split."""
    stages, n = run["stages"], len(units.names)
    even = tuple((n * s) // stages for s in range(stages + 1))
    ref_args = {**run, **(units.split(even) if stages > 1 else {})}
    ref = profile.cached(
        (workload, repr(sorted(ref_args.items()))),
        lambda: profile.workload_report(workload, ref_args),
        units.group,
    )
    if ref is None:
        return []
    zero = profile.GroupCost()
    fixed = max(ref.ipu_fixed.values())
    ratio = max(ref.ipu_tile_ratio.values())

    def groups(a: int, b: int, s: int) -> list[profile.GroupCost]:
        return [ref.groups.get(g, zero) for g in _stage_groups(units, a, b, s, stages)]

    def seconds(a: int, b: int, s: int) -> float:
        return sum(c.forward_s for c in groups(a, b, s))

    def used(a: int, b: int, s: int) -> float:
        return fixed + sum(
            c.weight_bytes + c.state_bytes + c.activation_bytes for c in groups(a, b, s)
        )

    def cycle(bounds: tuple[int, ...]) -> float:
        return max(seconds(a, b, s) for s, (a, b) in enumerate(zip(bounds, bounds[1:])))

    steps, samples = run["steps"], run["replicas"] * run["micro-batch"]
    # What the reference spent per micro-batch besides its slowest stage's cycles (E: exchange,
    # syncs and host I/O taken as added to the compute, not overlapped with it).
    besides = max(ref.sample_s * samples * steps - (steps + stages - 1) * cycle(even), 0.0) / steps

    def fits(a: int, b: int, s: int) -> bool:
        return used(a, b, s) <= PRUNE_FACTOR * ref.budget_bytes

    out = []
    for split in best_splits(n, stages, seconds, fits, SPLITS_KEPT):
        bounds = split.bounds
        peak = max(used(a, b, s) for s, (a, b) in enumerate(zip(bounds, bounds[1:])))
        step = (steps + stages - 1) * split.bottleneck + steps * besides
        args = {**run, **(units.split(bounds) if stages > 1 else {})}
        gives = f"pipeline fill and drain over {stages} stages" if stages > 1 else "nothing notable"
        out.append(Candidate.of(args, samples * steps / step, gives, peak, ref.budget_bytes, ratio))
    return out


def best_py(args: dict[str, Any]) -> str:
    """The IPUConfig, stage assignment and pipelining options of an inference plan, to paste
    into an IPU TensorFlow 2 script (``model`` built in the strategy's scope)."""
    from ipusim.plan.output import _stages_py, ipus_per_replica

    ipr, replicas, steps = ipus_per_replica(args), args["replicas"], args["steps"]
    lines = [
        "# ipusim plan: the inference configuration to paste (IPU TensorFlow 2)",
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
        # The accumulation count is not used by predict: its pipeline runs steps_per_execution
        # micro-batches (IPU TensorFlow builds it with gradient_accumulation_count set so).
        stage_lines = _stages_py({**args, "accumulation": steps, "offload": None})
        lines += [
            line for line in stage_lines if "optimizer_state" not in line and "offload" not in line
        ]
    lines += [
        f"model.compile(steps_per_execution={steps})",
        f"# micro-batch (dataset batch size per replica): {args['micro-batch']}",
        f"model.predict(dataset, steps={steps * replicas})",
    ]
    return "\n".join(lines) + "\n"
