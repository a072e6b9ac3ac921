"""The configuration space of a workload, and a cheap memory and time estimate per candidate.

A candidate is the ``[args]`` table of a validation row (the workload's command line): the
simulator judges it by running it timing-only. The estimates here only order and prune the
candidates before that; they never decide that a plan fits (the simulator's memory check does).

BERT: the encoder layers are split over the IPUs of a replica with :func:`best_splits`, from
per-layer costs in FLOPs and bytes derived from the model's sizes (not yet from a lowered
profile), with the masked-token head in a stage of its own mapped back to IPU 0, as Graphcore's
BERT keeps it next to the embedding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.plan.partition import best_splits

__all__ = ["BertShape", "Candidate", "bert_candidates"]

#: In-Processor memory of a Mk2 / Bow IPU in bytes (S: GC200 / Bow IPU datasheets, 900 MB).
IPU_BYTES = 900e6
#: Code, exchange buffers and control on each IPU, bytes (E: a share of the 900 MB that
#: PopVision shows for BERT-Large stages; only orders candidates, the simulator decides).
FIXED_BYTES = 150e6
#: Estimates above this multiple of the budget are pruned (E: loose, so the estimate's error
#: never drops a plan the memory check would pass; the simulator judges the rest).
PRUNE_FACTOR = 1.3
#: availableMemoryProportion values tried (E: the IPU default 0.6 and the 0.2 of Graphcore's
#: BERT configs, which leaves room for larger micro-batches).
MEMORY_PROPORTIONS = (0.2, 0.6)
#: Micro-batch size at which the tiles are half as efficient as at large micro-batches (E).
HALF_EFFICIENCY_BATCH = 1.0

SIZES = {"base": (12, 768, 12, 3072), "large": (24, 1024, 16, 4096)}


@dataclass(frozen=True)
class BertShape:
    """The sizes that fix a BERT model: layers, hidden, heads, intermediate, sequence, masked
    tokens, vocabulary."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    sequence: int
    masked: int
    vocab: int

    @classmethod
    def of(cls, args: dict[str, Any]) -> BertShape:
        size = str(args.get("size", "large"))
        if size not in SIZES:
            raise ConfigurationError(
                f"workload argument size must be one of {sorted(SIZES)}, got {size!r}"
            )
        layers, hidden, heads, inter = SIZES[size]
        seq, masked = int(args.get("sequence", 128)), int(args.get("masked", 20))
        return cls(layers, hidden, heads, inter, seq, masked, int(args.get("vocab", 30522)))

    def layer_flops(self) -> float:
        """Forward FLOPs of one encoder layer per sample."""
        h, s = self.hidden, self.sequence
        return s * (8 * h * h + 4 * h * self.intermediate) + 4 * s * s * h

    def head_flops(self) -> float:
        """Forward FLOPs of the masked-token head per sample."""
        return self.masked * (2 * self.hidden**2 + 2 * self.hidden * self.vocab)

    def layer_params(self) -> float:
        return 4 * self.hidden**2 + 2 * self.hidden * self.intermediate

    def embed_params(self) -> float:
        """Embedding and (untied) head parameters, all on IPU 0."""
        return 2 * self.vocab * self.hidden + (self.sequence + 2) * self.hidden


@dataclass(frozen=True)
class Candidate:
    """One configuration, with its estimates.

    Attributes:
        args: the workload's arguments (a validation row's ``[args]``).
        memory: the estimated fullest IPU's bytes over its budget.
        speed: the estimated throughput, relative (samples per unit time, only for ordering).
        gives_up: what this configuration trades away, in words.
    """

    args: dict[str, Any]
    memory: float
    speed: float
    gives_up: str


def _stage_bytes(
    shape: BertShape, layers: int, stage: int, stages: int, opt: dict[str, Any]
) -> float:
    """Estimated bytes of an encoder stage holding ``layers`` layers at position ``stage``."""
    per_param = 4.0 if opt["offload"] == "on" else 12.0  # fp16 weight + grad (+ fp32 Adam m, v)
    params = layers * shape.layer_params() + (shape.embed_params() if stage == 0 else 0.0)
    mb, s, h = int(opt["micro-batch"]), shape.sequence, shape.hidden
    # Grouped schedule: stage s holds the stashes of the micro-batches still in flight after it.
    in_flight = 2 * (stages - stage)
    if opt["recompute"]:
        stash = layers * mb * s * h * 2.0
        work = mb * (shape.heads * s * s * 4.0 + s * shape.intermediate * 4.0 + s * h * 20.0)
    else:
        stash = layers * mb * s * (12 * h + 2 * shape.intermediate + 2 * shape.heads * s) * 2.0
        work = mb * (shape.heads * s * s * 4.0 + s * shape.intermediate * 4.0)
    return FIXED_BYTES + params * per_param + in_flight * stash + work


def _pipeline_options(replicas: int, global_batch: int, stages: int) -> Iterator[dict[str, Any]]:
    """Micro-batch, accumulation, recomputation and offload choices with the global batch."""
    for mb in (1, 2, 4, 8, 16, 32):
        if global_batch % (mb * replicas):
            continue
        acc = global_batch // (mb * replicas)
        # IPU TensorFlow's Grouped schedule wants a multiple of twice the stage count.
        if stages > 1 and acc % (2 * stages):
            continue
        for recompute in (True, False):
            for proportion in MEMORY_PROPORTIONS:
                yield {
                    "micro-batch": mb,
                    "accumulation": acc,
                    "recompute": recompute,
                    "offload": "on",
                    "memory-proportion": proportion,
                }


def bert_candidates(
    args: dict[str, Any], num_ipus: int, global_batch: int, precision: str, prune: bool = True
) -> list[Candidate]:
    """Every BERT configuration on ``num_ipus`` IPUs with ``global_batch`` samples per update,
    estimated, pruned by memory (unless ``prune`` is False) and ordered fastest first."""
    shape = BertShape.of(args)
    out: list[Candidate] = []
    for ipr in (1, 2, 4, 8, 16):
        if ipr > num_ipus or num_ipus % ipr or ipr > shape.layers:
            continue
        replicas = num_ipus // ipr
        stages = ipr + 1 if ipr > 1 else 1
        for opt in _pipeline_options(replicas, global_batch, stages):
            out += _bert_splits(shape, args, ipr, replicas, stages, opt, precision, prune)
    kept = [c for c in out if c.memory <= PRUNE_FACTOR or not prune]
    return sorted(kept, key=lambda c: (-c.speed, c.memory, repr(sorted(c.args.items()))))


def _bert_splits(
    shape: BertShape,
    base: dict[str, Any],
    ipr: int,
    replicas: int,
    stages: int,
    opt: dict[str, Any],
    precision: str,
    prune: bool = True,
) -> list[Candidate]:
    """The best few layer splits over ``ipr`` IPUs for one set of options, as candidates."""
    layer, head = shape.layer_flops(), shape.head_flops()
    encoder = max(ipr, 1)

    def time(first: int, stop: int, stage: int) -> float:
        return (stop - first) * layer + (head if stage == 0 else 0.0)

    def fits(first: int, stop: int, stage: int) -> bool:
        used = _stage_bytes(shape, stop - first, stage, encoder, opt)
        return not prune or used <= PRUNE_FACTOR * IPU_BYTES

    splits = best_splits(shape.layers, encoder, time, fits, keep=3)
    cands = []
    recompute_factor = 4.0 / 3.0 if opt["recompute"] else 1.0  # forward again: 4 passes, not 3
    mb, acc = opt["micro-batch"], opt["accumulation"]
    efficiency = mb / (mb + HALF_EFFICIENCY_BATCH)
    for split in splits:
        per_ipu = list(split.layers_per_stage)
        used = (
            max(_stage_bytes(shape, n, s, encoder, opt) for s, n in enumerate(per_ipu)) / IPU_BYTES
        )
        ramp = (acc + stages - 1) / acc
        step = split.bottleneck * recompute_factor * ramp / efficiency
        args = {k: v for k, v in base.items()}
        args.update(
            replicas=replicas,
            **{"micro-batch": mb, "accumulation": acc, "steps": acc},
            stages=stages,
            precision=precision,
            optimizer=args.get("optimizer", "adam"),
            offload=opt["offload"],
            schedule="grouped",
            **{"memory-proportion": opt["memory-proportion"]},
        )
        if ipr > 1:
            args.update(
                {
                    "device-mapping": [*range(ipr), 0],
                    "heads-stage": True,
                    "layers-per-ipu": per_ipu,
                }
            )
        if opt["recompute"]:
            args.update(
                {
                    "recompute": True,
                    "recomputation-mode": "interleaved" if ipr > 1 else "auto",
                    "checkpoint-every-layer": True,
                }
            )
        if replicas > 1:
            args["sharded-optimizer-state"] = True
        cands.append(Candidate(args, used, replicas / step, _gives_up(opt, ipr, replicas)))
    return cands


def _gives_up(opt: dict[str, Any], ipr: int, replicas: int) -> str:
    """What a configuration trades away, in a few words."""
    parts = []
    if opt["recompute"]:
        parts.append("recomputes the forward pass (about a third more compute)")
    if ipr > 1:
        parts.append(f"pipeline fill and drain over {ipr + 1} stages")
    if replicas > 1:
        parts.append(f"gradient all-reduce over {replicas} replicas")
    if opt["offload"] == "on":
        parts.append("optimizer state streamed from Streaming Memory")
    return "; ".join(parts) or "nothing notable"
