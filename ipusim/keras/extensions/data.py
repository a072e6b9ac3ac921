"""The IPU's data rules for fit / evaluate / predict (IPU TensorFlow's ``IPUDataHandler``).

On the IPU every step must have the same, fully known shapes, and an execution of
``steps_per_execution`` steps must divide the epoch. These checks run before anything executes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from ipusim.data import Dataset
from ipusim.data.dataset import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from ipusim.errors import ConfigurationError, IncompatibleStateError, InputDataError
from ipusim.keras.engine.data_adapter import (
    as_arrays,
    check_batch_size,
    check_dataset_not_empty,
    check_steps,
    unpack_x_y_sample_weight,
)
from ipusim.keras.engine.nest import flatten, map_structure

log = logging.getLogger("ipusim")


@dataclass(frozen=True)
class IPUDataPlan:
    """What the checks decided: steps per epoch (per replica), the steps of one execution (per
    replica) and the micro-batch size."""

    steps_per_epoch: int
    steps_per_execution: int
    batch_size: int


def _spec_shapes(dataset: Dataset) -> list[tuple[int | None, ...]]:
    return [tuple(s.shape) for s in flatten(dataset.element_spec)]


def check_data(
    model: Any,
    what: str,
    x: Any,
    batch_size: int | None,
    steps: int | None,
    steps_per_execution: int,
    gradient_accumulation: int = 1,
    pipelined: bool = False,
    replicas: int = 1,
) -> IPUDataPlan:
    """Validate the data of a fit/evaluate/predict on the IPU and settle the step counts.

    Raises:
        InputDataError: generators, no data, a batch size or step count that is not a positive
            integer, partial batches, unknown sizes, too little data, shapes that are not fully
            defined.
        ConfigurationError: ``steps_per_execution`` not dividing the epoch.
        IncompatibleStateError: ``steps_per_execution`` not divisible by the gradient
            accumulation count.
    """
    steps = check_steps(steps, what)
    if hasattr(x, "__next__") or callable(getattr(x, "send", None)):
        raise InputDataError(
            f"{what}: the data is a {type(x).__name__}, but the IPU needs every batch's shape "
            "before it runs. Wrap it with ipusim.data.Dataset.from_generator(..., "
            "output_signature=...) so the shapes are known."
        )
    if isinstance(x, Dataset):
        batch, size = _dataset_batches(x, what, steps)
    else:
        batch, size = _array_batches(x, batch_size, what)
    if steps is not None and size >= 0 and steps > size:
        raise InputDataError(
            f"{what}: not enough data: {steps} steps were requested but the data only holds "
            f"{size} batches. Lower the steps, or call repeat() on the dataset."
        )
    inferred = steps if steps is not None else size
    if replicas > 1:
        inferred = _per_replica(inferred, replicas, what)
    spe = steps_per_execution
    if spe > inferred:
        log.warning(
            "%s: steps_per_execution is %d but an epoch only has %d steps; using %d "
            "as steps_per_execution.",
            what,
            spe,
            inferred,
            inferred,
        )
        spe = inferred
    if inferred % spe:
        raise ConfigurationError(
            f"{what}: steps_per_execution ({spe}) must divide the number of steps in an epoch "
            f"({inferred}). Choose steps_per_execution among the divisors of {inferred}, or "
            "change steps_per_epoch."
        )
    if what == "fit" and gradient_accumulation > 1 and spe % gradient_accumulation:
        kind = "pipelined model" if pipelined else "model"
        raise IncompatibleStateError(
            f"The {kind} accumulates gradients over {gradient_accumulation} steps "
            f"(gradient_accumulation_steps_per_replica), but steps_per_execution is {spe}, "
            "which it does not divide. Make steps_per_execution a multiple of "
            "gradient_accumulation_steps_per_replica."
        )
    if spe == 1:
        log.info(
            "The model %r runs only 1 step per execution; pass a larger "
            "`steps_per_execution` to compile() to cut host overhead.",
            model.name,
        )
    return IPUDataPlan(inferred, spe, batch)


def _dataset_batches(x: Dataset, what: str, steps: int | None) -> tuple[int, int]:
    """(batch size, batches) of a Dataset; batches may be the unknown or infinite cardinality
    when ``steps`` is given.

    Raises:
        InputDataError: an empty dataset, shapes that are not fully defined, or a size that is
            unknown or infinite without ``steps``.
    """
    check_dataset_not_empty(x, what)
    shapes = _spec_shapes(x)
    for shape in shapes:
        if any(d is None for d in shape):
            raise InputDataError(
                f"{what}: the dataset yields elements of shape {shape}, which is not fully "
                "defined; the IPU needs static shapes. If you use batch(), pass "
                "drop_remainder=True."
            )
    first = shapes[0][0] if shapes and shapes[0] else 1
    assert first is not None  # no dimension is None (checked above)
    batch = int(first)
    size = int(x.cardinality())
    if size == UNKNOWN_CARDINALITY and steps is None:
        raise InputDataError(
            f"{what}: the size of the dataset cannot be inferred; pass the "
            "number of steps to run (steps_per_epoch / steps)"
        )
    if size == INFINITE_CARDINALITY and steps is None:
        raise InputDataError(
            f"{what}: the dataset repeats forever; pass the number of steps to "
            "run (steps_per_epoch / steps)"
        )
    return batch, size


def _array_batches(x: Any, batch_size: int | None, what: str) -> tuple[int, int]:
    """(batch size, batches) of arrays.

    Raises:
        InputDataError: no data, a scalar, no samples, or a partial last batch.
    """
    batch = check_batch_size(batch_size, what)
    leaves = [a for a in flatten(as_arrays(x)) if a is not None]
    if not leaves:
        raise InputDataError(f"{what}: no input data was given; pass `x`")
    if np.ndim(leaves[0]) == 0:
        raise InputDataError(
            f"{what}: `x` must have a first (batch) dimension, but it is a scalar; pass "
            "arrays of shape (samples, ...)."
        )
    n = int(np.shape(leaves[0])[0])
    if n == 0:
        raise InputDataError(
            f"{what}: `x` holds 0 samples; there is nothing to run. Pass arrays with at "
            "least one batch of samples (shape (samples, ...))."
        )
    if n % batch:
        raise InputDataError(
            f"{what}: {n} samples do not split into batches of {batch}: the last batch "
            f"would be partial ({n % batch} samples), and the IPU needs every batch to "
            "have the same size. Change `batch_size` to a divisor of the number of "
            "samples, or trim/pad the data."
        )
    return batch, n // batch


def _per_replica(steps: int, replicas: int, what: str) -> int:
    """The batches each replica runs: ``steps`` split evenly (the rest dropped, with a warning).

    Raises:
        InputDataError: fewer batches than replicas.
    """
    per_replica, dropped = divmod(steps, replicas)
    if per_replica == 0:
        raise InputDataError(
            f"{what}: the data holds {steps} batch{'es' if steps != 1 else ''}, but each of the "
            f"{replicas} replicas needs at least one. Provide at least {replicas} batches (or fewer replicas)."
        )
    if dropped:
        log.warning(
            "%s: %d batches are split evenly over %d replicas; the remaining %d "
            "batch%s will be dropped.",
            what,
            steps,
            replicas,
            dropped,
            "" if dropped == 1 else "es",
        )
    return per_replica


def first_batch(x: Any, y: Any, sample_weight: Any, batch_size: int | None) -> tuple[Any, Any, Any]:
    """(x, y, sample_weight) arrays shaped like one batch of the data, for tracing.

    For a Dataset the arrays are zeros built from its element spec (nothing is read from it).
    """
    if isinstance(x, Dataset):
        zeros = map_structure(lambda s: np.zeros(s.shape, dtype=s.dtype), x.element_spec)
        return unpack_x_y_sample_weight(zeros)
    batch = 32 if batch_size is None else int(batch_size)

    def head(a: Any) -> Any:
        return np.asarray(a)[:batch]

    return (
        map_structure(head, as_arrays(x)),
        None if y is None else map_structure(head, as_arrays(y)),
        None if sample_weight is None else head(sample_weight),
    )
