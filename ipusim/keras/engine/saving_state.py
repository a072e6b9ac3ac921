"""The optimizer's state in a saved model: step count, slots, and a loss-scale optimizer's scale.

Keras' ``include_optimizer``: the header holds ``{"iterations", "slots": [[weight, slot], ...],
"loss_scale": {"scale", "counter"}}`` and each optimizer weight's array is the member ``oNNNNN``
(every weight: the slots, and state that is not a slot, such as Nadam's momentum cache, as
``[null, name]``). Restoring creates the optimizer's weights as its first training step would
(so they come in the same order) and then assigns the saved values. A slot names
its variable by the variable's position in ``model.weights`` (the order ``get_weights`` uses),
never by its name: a model rebuilt in the same session gets new layer names (``dense_3`` for
``dense``), as in Keras, whose object-based checkpoints match state by position too. Files from
before this rule name the variable; the header's ``weight_names`` translates such a name to its
position.

Restoring checks everything first (positions, slot names, shapes, dtypes, counts, a positive
finite scale) against the slots a fresh copy of the compiled optimizer would create, and only
then assigns, so a damaged state never half-restores an optimizer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ipusim.errors import ModelFileError
from ipusim.keras.engine.saving_files import file_error

__all__ = ["optimizer_state", "restore_optimizer"]

_FIX = "Load the model with compile=False (and compile it yourself), or save the model again."


def _layout(optimizer: Any) -> list[tuple[str | None, str, Any]]:
    """(variable name or None, slot or weight name, variable) of each of the optimizer's
    weights, in creation order: slots name their variable; other state (Nadam's momentum
    cache) has None and its own name."""
    owner = {
        id(slot): (var_name, slot_name)
        for var_name, by_slot in optimizer._slots.items()
        for slot_name, slot in by_slot.items()
    }
    return [(*owner.get(id(w), (None, w.name)), w) for w in optimizer._weights]


def optimizer_state(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """The header entry and arrays of the model's optimizer state; None without an optimizer.

    ``slots`` lists every weight of the optimizer in creation order (``optimizer.variables()``
    after ``iterations``): ``[position, slot name]`` for a slot, ``[null, name]`` for other
    state.
    """
    from ipusim.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer
    from ipusim.keras.optimizers.optimizer import Optimizer

    optimizer = getattr(model, "optimizer", None)
    if not isinstance(optimizer, Optimizer):
        return None
    position = {w.name: i for i, w in enumerate(model.weights)}
    slots: list[list[Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for var_name, name, weight in _layout(getattr(optimizer, "inner_optimizer", optimizer)):
        if var_name is not None and var_name not in position:
            continue  # state of another model's variable (an optimizer shared by two models)
        arrays[f"o{len(slots):05d}"] = weight.numpy()
        slots.append([None if var_name is None else position[var_name], name])
    state: dict[str, Any] = {"iterations": optimizer.iterations, "slots": slots}
    if isinstance(optimizer, LossScaleOptimizer):
        state["loss_scale"] = {"scale": optimizer.loss_scale, "counter": optimizer._counter}
    return state, arrays


def _expected(model: Any) -> dict[tuple[str | None, str], tuple[tuple[int, ...], np.dtype]] | None:
    """(variable name or None, name) -> (shape, dtype) of every weight the model's optimizer
    creates, from a fresh copy of it (the model's own optimizer is left untouched); None when
    the optimizer cannot be copied through its config (a user's class without one)."""
    from ipusim.keras import optimizers

    # A LossScaleOptimizer's slots are its inner optimizer's.
    optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    try:
        probe = optimizers.deserialize(optimizers.serialize(optimizer))
    except (TypeError, ValueError, KeyError, AttributeError, NotImplementedError):
        return None
    probe._create_slots(list(model.trainable_variables))
    return {
        (var_name, name): (tuple(weight.shape), weight.value.dtype)
        for var_name, name, weight in _layout(probe)
    }


def _slot_position(entry: Any, header: dict[str, Any], count: int) -> int | None:
    """The weight position a saved entry names (a position, a legacy variable name, or None
    for state that is not a slot)."""
    if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[1], str):
        raise ModelFileError(f"expected [weight position < {count} or null, name], found {entry!r}")
    where = entry[0]
    if where is None:
        return None
    names: list[str] = header["weight_names"]
    if isinstance(where, str) and where in names:
        return names.index(where)
    if isinstance(where, int) and not isinstance(where, bool) and 0 <= where < count:
        return where
    raise ModelFileError(f"expected [weight position < {count} or null, name], found {entry!r}")


def _checked_slots(
    model: Any, state: dict[str, Any], data: dict[str, np.ndarray], header: dict[str, Any]
) -> list[tuple[Any, str, np.ndarray]]:
    """(variable or None, name, value) of every saved optimizer weight, each checked against
    the weights a fresh copy of the model's optimizer creates."""
    entries = state.get("slots")
    if not isinstance(entries, list):
        raise ModelFileError(f"'slots' must be a list, found {entries!r}")
    weights = model.weights
    expected = _expected(model)
    restored = []
    for i, entry in enumerate(entries):
        position = _slot_position(entry, header, len(weights))
        var = None if position is None else weights[position]
        name = entry[1]
        value = data.get(f"o{i:05d}")
        if value is None:
            raise ModelFileError(f"optimizer weight {i} has no array 'o{i:05d}'")
        key = (None if var is None else var.name, name)
        want = None if expected is None else expected.get(key)
        if expected is not None and want is None:
            raise ModelFileError(f"the optimizer has no weight {name!r} for {key[0]!r}")
        shape, dtype = want if want is not None else (tuple(value.shape), value.dtype)
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise ModelFileError(
                f"optimizer weight {name!r} of {key[0]!r} is {value.dtype} "
                f"{tuple(value.shape)}, expected {dtype} {shape}"
            )
        restored.append((var, name, value))
    if sum(1 for key in data if key.startswith("o")) != len(entries):
        raise ModelFileError(
            f"the file holds slot arrays that 'slots' ({len(entries)}) does not name"
        )
    return restored


def _assign(model: Any, restored: list[tuple[Any, str, np.ndarray]]) -> None:
    """Create the optimizer's weights as training would (same order) and give them the values."""
    inner = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    # The variables with state, in the order training passes them (the model's).
    variables = [w for w in model.trainable_variables if any(w is r[0] for r in restored)]
    if variables:
        inner._create_slots(variables)
    created = {(var_name, name): weight for var_name, name, weight in _layout(inner)}
    for var, name, value in restored:
        weight = created.get((None if var is None else var.name, name))
        if weight is None:  # a slot only training creates (none of ipusim's optimizers)
            weight = inner._add_slot(var, name, 0.0, shape=value.shape, dtype=value.dtype)
        weight.assign(value)


#: The largest plausible step count: 2**53 steps (exact in a float64) outlast any run. E
_MAX_COUNT = 2**53


def _checked_count(value: Any, field: str) -> int:
    """``value``, checked to be a step count (an int in ``[0, _MAX_COUNT]``)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_COUNT:
        raise ModelFileError(f"'{field}' must be a count in [0, 2**53], found {value!r}")
    return value


def _checked_loss_scale(optimizer: Any, saved: Any) -> tuple[float, int] | None:
    from ipusim.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer

    if saved is None:
        return None  # a file from before loss scales were saved: the optimizer starts afresh
    if not isinstance(optimizer, LossScaleOptimizer) or not isinstance(saved, dict):
        raise ModelFileError(f"'loss_scale' {saved!r} does not fit optimizer {optimizer!r}")
    scale = saved.get("scale")
    if (
        isinstance(scale, bool)
        or not isinstance(scale, int | float)
        or not (math.isfinite(scale) and scale > 0)
    ):
        raise ModelFileError(
            f"'loss_scale.scale' must be a positive finite number, found {scale!r}"
        )
    return float(scale), _checked_count(saved.get("counter"), "loss_scale.counter")


def restore_optimizer(
    model: Any,
    state: Any,
    data: dict[str, np.ndarray],
    header: dict[str, Any],
    path: str,
) -> None:
    """Give the model's freshly compiled optimizer the saved state (all checked first).

    Raises:
        ModelFileError: naming the field of ``optimizer_state`` that does not fit.
    """
    optimizer = model.optimizer
    try:
        if not isinstance(state, dict):
            raise ModelFileError(f"expected an object, found {type(state).__name__}")
        iterations = _checked_count(state.get("iterations"), "iterations")
        restored = _checked_slots(model, state, data, header)
        loss_scale = _checked_loss_scale(optimizer, state.get("loss_scale"))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise file_error(
            path,
            "header field 'optimizer_state'",
            f"the saved optimizer state does not fit the model ({exc})",
            _FIX,
        ) from None
    _assign(model, restored)
    optimizer.iterations = iterations
    if loss_scale is not None:
        optimizer.loss_scale_variable.assign(np.asarray(loss_scale[0], np.float32))
        optimizer._counter = loss_scale[1]
