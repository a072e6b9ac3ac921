"""A user's Keras model's configuration space: IPUs per replica and replicas, the layers of
each pipeline stage (cut at the model's layer boundaries by :func:`best_splits`), micro-batch and
gradient accumulation for the global batch, and recomputation.

The model runs through ``workloads/keras_model.py`` (``--model`` names the function that builds
it). Estimates come from :class:`~ipusim.plan.profile.Profile` s of its own lowering, one group
per layer: data parallel, the configuration itself at two micro-batches (as ResNet-50's space);
pipelined over ``k`` IPUs, a reference run split evenly by layer count at each micro-batch tried,
whose per-layer seconds and bytes the dynamic programme re-balances (a stage's activations are
the sum of its layers' in the reference, E: the stash depends on the stage's position too; the
simulator judges).
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.lowering.supersteps import element_bytes
from ipusim.plan import options, profile
from ipusim.plan.partition import best_splits
from ipusim.plan.space import Candidate, fastest_first

__all__ = ["layer_names", "model_candidates"]

#: IPUs per replica tried (powers of two, as IPU systems are built).
IPUS_PER_REPLICA = (1, 2, 4, 8, 16)
#: Micro-batches profiled per pipeline width, at most (E: bounds the lowerings a search costs).
PIPELINE_BATCHES = 4
#: Estimates above this multiple of the budget are pruned (E, as BERT's space).
PRUNE_FACTOR = 1.3
#: Data-parallel micro-batches profiled to interpolate the others (E, as ResNet-50's space).
REFERENCE_BATCHES = (4, 16)


def layer_names(reference: str, needs_loss: bool = True) -> list[str]:
    """The model's layers in pipeline-assignment order (the order stages take them); the
    model must be compiled with a loss if it ``needs_loss`` (to be trained)."""
    return _built(reference, needs_loss)[0]


def _built(reference: str, needs_loss: bool = True) -> tuple[list[str], int]:
    """:func:`layer_names`, and the slots per variable of the model's compiled optimizer."""
    import ipusim
    from ipusim.config import reset_ipu_configuration
    from workloads.keras_model import builder

    try:
        with ipusim.IPUStrategy().scope():
            model = builder(reference, needs_loss=needs_loss)()
            names = [a.layer.name for a in model.get_pipeline_stage_assignment()]
            return names, options.optimizer_slots(model.optimizer)
    finally:
        reset_ipu_configuration()


def _per_layer(layer: str) -> str:
    return layer


def _executions(accumulation: int) -> int:
    """Weight updates a candidate runs (about 16 micro-batches, E: enough for a steady state)."""
    return max(1, 16 // accumulation)


def model_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str
) -> list[Candidate]:
    """The configurations of ``args["model"]`` on ``num_ipus`` IPUs, fastest first (estimates).

    Raises:
        ConfigurationError: no ``model`` in ``args``, or a model with no layers to place.
    """
    if "model" not in args:
        raise ConfigurationError("planning a Keras model needs args['model'] (module:function)")
    names, slots = _built(str(args["model"]))
    if not names:
        raise ConfigurationError(f"the model {args['model']!r} has no layers to place on IPUs")
    base = {**args, "precision": precision}
    out: list[Candidate] = []
    for ipr in IPUS_PER_REPLICA:
        if ipr > num_ipus or num_ipus % ipr or ipr > len(names):
            continue
        replicas = num_ipus // ipr
        per_replica, rem = divmod(global_batch, replicas)
        if rem:
            continue
        mbs = [m for m in range(1, min(per_replica, 64) + 1) if per_replica % m == 0]
        if ipr == 1:
            dp = {**base, "replicas": replicas}
            out += _data_parallel(dp, mbs, per_replica, global_batch, slots)
        else:
            mbs = [m for m in mbs if (per_replica // m) % (2 * ipr) == 0][-PIPELINE_BATCHES:]
            for mb in mbs:
                out += _pipelined(base, names, ipr, replicas, mb, per_replica // mb)
    return options.counted(fastest_first(options.undominated(out)), len(out))


def _data_parallel(
    base: dict[str, Any], mbs: list[int], per_replica: int, global_batch: int, slots: int
) -> list[Candidate]:
    """One IPU per replica, profiled at two micro-batches as the workload runs by default (the
    optimizer state offloaded with accumulation where there is Streaming Memory, as IPU
    TensorFlow does), for every optimizer-state and I/O tile option."""
    from ipusim.hardware import load_system

    figures = profile.per_micro_batch(
        "keras_model", base, _per_layer, mbs, per_replica, REFERENCE_BATCHES, _executions
    )
    system = str(base["system"])
    ref = ("on" if load_system(system).streaming_memory is not None else "off", False)
    sizes = (slots, element_bytes(str(base["precision"])))
    out = []
    for mb, fig in figures.items():
        acc = per_replica // mb
        args = {**base, "micro-batch": mb, "accumulation": acc, "stages": 1}
        args["steps"] = acc * _executions(acc)
        gives = "nothing notable" if base["replicas"] == 1 else "gradient all-reduce"
        variants = options.data_parallel_variants(fig, acc, system, base["replicas"], ref, sizes)
        for state, io, step, used in variants:
            text = "; ".join([gives, *options.gives_up(state, io)])
            a = options.setting_args(args, state, io)
            out.append(Candidate.of(a, global_batch / step, text, used, fig[4], fig[1]))
    return out


def _pipelined(
    base: dict[str, Any], names: list[str], ipr: int, replicas: int, mb: int, acc: int
) -> list[Candidate]:
    """Splits of ``names`` over ``ipr`` IPUs at micro-batch ``mb``, from one reference run."""
    run = {
        **base,
        "replicas": replicas,
        "micro-batch": mb,
        "accumulation": acc,
        "steps": acc * _executions(acc),
        "stages": ipr,
        "split": _even_split(names, ipr),
    }
    ref = profile.cached(
        ("keras_model", repr(sorted(run.items()))),
        lambda: profile.workload_report("keras_model", run),
        _per_layer,
    )
    if ref is None:
        return []
    costs = [ref.groups.get(n, profile.GroupCost()) for n in names]
    return [c for recompute in (False, True) for c in _splits(ref, names, costs, run, recompute)]


def _splits(
    ref: profile.Profile,
    names: list[str],
    costs: list[profile.GroupCost],
    run: dict[str, Any],
    recompute: bool,
) -> list[Candidate]:
    """The best two splits of the layers over the reference run's IPUs, as candidates."""
    ipr, replicas, mb, acc = run["stages"], run["replicas"], run["micro-batch"], run["accumulation"]
    fixed = max(ref.ipu_fixed.values())
    ratio = max(ref.ipu_tile_ratio.values())

    def seconds(a: int, b: int, s: int) -> float:
        fwd = sum(c.forward_s for c in costs[a:b])
        return fwd * (2.0 if recompute else 1.0) + sum(c.backward_s for c in costs[a:b])

    def used(a: int, b: int, s: int) -> float:
        return fixed + sum(c.weight_bytes + c.state_bytes + c.activation_bytes for c in costs[a:b])

    def fits(a: int, b: int, s: int) -> bool:
        return used(a, b, s) <= PRUNE_FACTOR * ref.budget_bytes

    out = []
    for split in best_splits(len(names), ipr, seconds, fits, keep=2):
        bounds = split.bounds
        peak = max(used(a, b, s) for s, (a, b) in enumerate(zip(bounds, bounds[1:])))
        step = (acc + ipr - 1) * split.bottleneck + ref.update_s
        args = {**run, "split": [names[b - 1] for b in bounds[1:-1]]}
        gives = f"pipeline fill and drain over {ipr} stages"
        if recompute:
            args["recompute"] = True
            gives += "; recomputes the forward pass"
        speed = replicas * mb * acc / step
        out.append(Candidate.of(args, speed, gives, peak, ref.budget_bytes, ratio))
    return out


def _even_split(names: list[str], stages: int) -> list[str]:
    """Layer names after which ``stages`` stages of equal layer counts start."""
    n = len(names)
    return [names[(n * s) // stages - 1] for s in range(1, stages)]
