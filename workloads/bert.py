"""BERT (Base or Large) pre-training throughput: embeddings, self-attention, layer norm, GELU
feed-forward, and a masked-token head, pipelined over IPUs and replicated.

Run: ``python workloads/bert.py --size large --stages 4 --replicas 4 --timing-only``
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make `workloads` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ipusim  # noqa: E402
from ipusim import keras  # noqa: E402
from ipusim.errors import ConfigurationError  # noqa: E402
from ipusim.keras import ops  # noqa: E402
from workloads import common  # noqa: E402

SIZES = {
    "base": {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072},
    "large": {"layers": 24, "hidden": 1024, "heads": 16, "intermediate": 4096},
}
VOCAB = 30522


def gelu(x: Any) -> Any:
    """GELU in its tanh form, as Graphcore's BERT uses it (``ipu.nn_ops.gelu``, popnn's GELU)."""
    return keras.activations.gelu(x, approximate=True)


class PositionEmbedding(keras.layers.Layer):
    """Adds a learned embedding per position to (batch, sequence, hidden) inputs."""

    def build(self, input_shape: Any) -> None:
        self.table = self.add_weight(
            "embeddings",
            (input_shape[1], input_shape[2]),
            initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        )
        self.built = True

    def call(self, inputs: Any) -> Any:
        return inputs + self.table


class SelfAttention(keras.layers.Layer):
    """Multi-head self-attention: Q, K, V projections, scaled dot products, output projection."""

    def __init__(self, hidden: int, heads: int, dropout: float = 0.1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.hidden, self.heads, self.head_size = hidden, heads, hidden // heads
        self.query = keras.layers.Dense(hidden, name=f"{self.name}_query")
        self.key = keras.layers.Dense(hidden, name=f"{self.name}_key")
        self.value = keras.layers.Dense(hidden, name=f"{self.name}_value")
        self.out = keras.layers.Dense(hidden, name=f"{self.name}_output")
        self.dropout = keras.layers.Dropout(dropout)

    def _split(self, x: Any, sequence: int) -> Any:
        x = ops.reshape(x, (-1, sequence, self.heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        sequence = inputs.shape[1]
        q = self._split(self.query(inputs), sequence)
        k = self._split(self.key(inputs), sequence)
        v = self._split(self.value(inputs), sequence)
        scores = ops.einsum("bhqd,bhkd->bhqk", q, k) * (1.0 / math.sqrt(self.head_size))
        probs = self.dropout(ops.softmax(scores, axis=-1), training=training)
        context = ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))
        return self.out(ops.reshape(context, (-1, sequence, self.hidden)))


def encoder_layer(x: Any, index: int, size: dict) -> Any:
    """One transformer encoder layer (post-layer-norm, as BERT)."""
    name = f"encoder_{index}"
    attention = SelfAttention(size["hidden"], size["heads"], name=f"{name}_attention")(x)
    attention = keras.layers.Dropout(0.1, name=f"{name}_attention_dropout")(attention)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name=f"{name}_attention_norm")(
        keras.layers.Add(name=f"{name}_attention_add")([x, attention])
    )
    h = keras.layers.Dense(size["intermediate"], activation=gelu, name=f"{name}_intermediate")(x)
    h = keras.layers.Dense(size["hidden"], name=f"{name}_ffn_output")(h)
    h = keras.layers.Dropout(0.1, name=f"{name}_ffn_dropout")(h)
    return keras.layers.LayerNormalization(epsilon=1e-12, name=f"{name}_ffn_norm")(
        keras.layers.Add(name=f"{name}_ffn_add")([x, h])
    )


def bert(
    size: str = "large",
    sequence: int = 128,
    masked: int = 20,
    micro_batch: int | None = None,
    vocab: int = VOCAB,
    checkpoint_every_layer: bool = False,
    checkpoint_every: int = 0,
) -> keras.Model:
    """A BERT pre-training model predicting ``masked`` tokens per sequence.

    Inputs: token ids (batch, sequence). Outputs: logits (batch, masked, vocabulary) for the
    first ``masked`` positions (the masked positions, gathered up front as BERT does).
    ``checkpoint_every_layer`` puts a recomputation checkpoint after every encoder layer, as
    Graphcore's BERT does (TensorFlow 2: ``convert_bert_model.py`` after each ``TFBertLayer``;
    PopART: ``recompute_checkpoint_every_layer``, on by default); ``checkpoint_every`` k puts
    one after every k-th layer instead (layers k - 1, 2k - 1 ...).
    """
    every = checkpoint_every or int(checkpoint_every_layer)
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, received {size!r}")
    if not 0 < masked <= sequence:
        raise ValueError(f"masked ({masked}) must be in 1..sequence ({sequence})")
    config = SIZES[size]
    ids = keras.Input((sequence,), batch_size=micro_batch, dtype="int32", name="input_ids")
    x = keras.layers.Embedding(vocab, config["hidden"], name="word_embeddings")(ids)
    x = PositionEmbedding(name="position_embeddings")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name="embeddings_norm")(x)
    x = keras.layers.Dropout(0.1, name="embeddings_dropout")(x)
    for index in range(config["layers"]):
        x = encoder_layer(x, index, config)
        if every and (index + 1) % every == 0:
            x = keras.layers.RecomputationCheckpoint(name=f"encoder_{index}_checkpoint")(x)
    # The masked positions (an OpLambda layer).
    x = ops.slice(x, (0, 0, 0), (-1, masked, -1))
    x = keras.layers.Dense(config["hidden"], activation=gelu, name="mlm_transform")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name="mlm_norm")(x)
    logits = keras.layers.Dense(vocab, name="mlm_logits")(x)
    return keras.Model(ids, logits, name=f"bert_{size}")


def layer_splits(size: str, layers_per_ipu: list[int]) -> list[str]:
    """Split points after the encoder layers that end each stage (embeddings on stage 0)."""
    total = SIZES[size]["layers"]
    if sum(layers_per_ipu) != total:
        raise ValueError(
            f"layers per IPU {layers_per_ipu} add up to {sum(layers_per_ipu)}, "
            f"but BERT-{size} has {total} layers"
        )
    ends, count = [], 0
    for layers in layers_per_ipu[:-1]:
        count += layers
        # A stage of no encoder layers holds only the embeddings.
        ends.append(f"encoder_{count - 1}_ffn_norm" if count else "embeddings_dropout")
    return ends


def half_layer_splits(size: str, attention: list[int], ffn: list[int]) -> list[str]:
    """Split points for a placement of attention and feed-forward halves of layers per stage
    (Graphcore's MLPerf BERT ``att_ffn_placement``): stage s holds the next ``attention[s]``
    attention halves and ``ffn[s]`` feed-forward halves, in the model's order."""
    total = SIZES[size]["layers"]
    if len(attention) != len(ffn) or sum(attention) != total or sum(ffn) != total:
        raise ValueError(
            f"attention halves {attention} and feed-forward halves {ffn} per stage must be "
            f"lists of the same length each adding up to BERT-{size}'s {total} layers"
        )
    ends, done = [], 0  # halves placed: attention of layer i is half 2i, its FFN half 2i + 1
    for a, f in zip(attention[:-1], ffn[:-1]):
        halves = range(done, done + a + f)
        if sum(1 for h in halves if h % 2 == 0) != a:
            raise ValueError(
                f"a stage of {a} attention and {f} feed-forward halves after {done} halves is "
                "not a contiguous run of the model's layers"
            )
        done += a + f
        if done == 0:  # a stage of no encoder halves holds only the embeddings
            ends.append("embeddings_dropout")
            continue
        layer = (done - 1) // 2
        ends.append(
            f"encoder_{layer}_ffn_norm" if done % 2 == 0 else f"encoder_{layer}_attention_norm"
        )
    return ends


def split_points(
    size: str,
    layers_per_ipu: list[int],
    ffn_per_ipu: list[int] | None = None,
    heads_stage: bool = False,
    checkpoint_every: int = 0,
) -> list[str]:
    """The layers after which a stage starts: :func:`layer_splits`, or :func:`half_layer_splits`
    with ``ffn_per_ipu``; with ``heads_stage`` the head starts a stage of its own; with a
    checkpoint after every ``checkpoint_every`` layers (True: every layer) a stage ends after
    its last layer's checkpoint, where that layer has one."""
    if ffn_per_ipu:
        splits = half_layer_splits(size, layers_per_ipu, ffn_per_ipu)
    else:
        splits = layer_splits(size, layers_per_ipu)
    if heads_stage:
        splits.append(f"encoder_{SIZES[size]['layers'] - 1}_ffn_norm")
    if checkpoint_every:
        splits = [_after_checkpoint(name, int(checkpoint_every)) for name in splits]
    return splits


def _after_checkpoint(split: str, every: int) -> str:
    """``split``, or the checkpoint after it when its encoder layer ends with one."""
    if split.endswith("_ffn_norm") and (int(split.split("_")[1]) + 1) % every == 0:
        return split.replace("_ffn_norm", "_checkpoint")
    return split


def build_parser() -> argparse.ArgumentParser:
    """The command line of this workload (the common one and BERT's own arguments)."""
    p = common.parser(
        "BERT pre-training throughput on simulated IPUs",
        micro_batch=8,
        accumulation=16,
        stages=4,
        steps=32,
        precision="fp16.16",
    )
    p.add_argument("--size", choices=sorted(SIZES), default="large")
    p.add_argument("--sequence", type=int, default=128)
    p.add_argument("--masked", type=int, default=20)
    p.add_argument("--vocab", type=int, default=VOCAB, help="vocabulary size")
    p.add_argument(
        "--heads-stage",
        action="store_true",
        help="put the masked-token head in a stage of its own after the encoder stages (map it "
        "back to IPU 0 with --device-mapping ... 0, as Graphcore's BERT does with its tied "
        "embedding)",
    )
    p.add_argument(
        "--layers-per-ipu",
        type=int,
        nargs="+",
        default=None,
        help="encoder layers per pipeline stage (default: even split)",
    )
    p.add_argument(
        "--ffn-per-ipu",
        type=int,
        nargs="+",
        default=None,
        help="feed-forward halves per pipeline stage; --layers-per-ipu then counts attention "
        "halves (Graphcore's MLPerf att_ffn_placement, which splits layers over IPUs)",
    )
    p.add_argument(
        "--checkpoint-every-layer",
        action="store_true",
        help="a recomputation checkpoint after every encoder layer, as Graphcore's BERT "
        "(kept with --recompute --recomputation-mode interleaved)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        metavar="K",
        help="a recomputation checkpoint after every K-th encoder layer (1: as "
        "--checkpoint-every-layer; 0: none unless --checkpoint-every-layer)",
    )
    return p


def main(argv: list[str] | None = None) -> Any:
    args = common.parse(build_parser(), argv)
    common.configure(args)
    layers = SIZES[args.size]["layers"]
    encoder_stages = args.stages - 1 if args.heads_stage else args.stages
    per_stage = args.layers_per_ipu or _even(layers, encoder_stages)
    if args.checkpoint_every < 0:
        raise ConfigurationError(
            f"--checkpoint-every must be 0 (none) or a number of layers, got {args.checkpoint_every}"
        )
    every = args.checkpoint_every or int(args.checkpoint_every_layer)
    with ipusim.IPUStrategy().scope():
        model = bert(
            args.size,
            args.sequence,
            args.masked,
            vocab=args.vocab,
            checkpoint_every=every,
        )
        if args.stages > 1:
            splits = split_points(
                args.size,
                per_stage,
                args.ffn_per_ipu,
                args.heads_stage,
                every,
            )
            common.assign_stages_by_split(model, splits)
        common.pipeline(model, args)
        model.compile(
            optimizer=common.optimizer(args) or "adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=common.metrics(args),
            steps_per_execution=common.steps_per_execution(args),
        )
        ids = np.zeros((args.micro_batch, args.sequence), np.int32)
        labels = np.zeros((args.micro_batch, args.masked), np.int32)
        common.run(model, args, common.synthetic(ids, labels))
    return common.report(model, args)


def _even(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


if __name__ == "__main__":
    main()
