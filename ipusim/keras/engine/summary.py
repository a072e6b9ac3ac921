"""``model.summary()``: the Keras table of layers, output shapes and parameter counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ipusim.errors import ConfigurationError
from ipusim.graph.spec import Shape


def _shape_text(shapes: list[Shape]) -> str:
    texts = [str(tuple(s)).replace(",)", ")") if len(s) != 1 else f"({s[0]},)" for s in shapes]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def table_row(fields: list[str], positions: list[int]) -> str:
    """One line of a Keras table (``model.summary()``, the pipeline stage summaries): each
    field cut or padded to end at its column's position (characters), the last character before
    each field a space."""
    line = ""
    for i, text in enumerate(fields):
        if i > 0:
            line = line[:-1] + " "
        line += str(text)
        line = line[: positions[i]]
        line += " " * (positions[i] - len(line))
    return line


def _layer_rows(model: Any) -> list[tuple[Any, list[Shape], list[str]]]:
    """(layer, output shapes, inbound layer names) for each top-level layer call of the model."""
    spec = model.input_spec_structure
    if spec is None:
        raise ConfigurationError(
            f"This model has not yet been built. Build the model first by calling `build()` or "
            f"by calling the model on a batch of data (model {model.name!r})."
        )
    trace = model.trace(spec, training=False)
    rows = []
    invocations = trace.graph.invocations
    for inv in invocations:
        if inv.parent is not None:
            continue
        inbound = []
        for sym in inv.inputs:
            producer = sym.node.invocation
            while producer is not None and invocations[producer].parent is not None:
                producer = invocations[producer].parent
            inbound.append(
                invocations[producer].name
                if producer is not None
                else sym.node.attrs.get("name", "input")
            )
        rows.append((inv.layer, [tuple(s.shape) for s in inv.outputs], inbound))
    return rows


def print_summary(
    model: Any,
    line_length: int | None = None,
    positions: list[float] | None = None,
    print_fn: Callable[[str], Any] | None = None,
) -> None:
    """Print the summary of ``model`` (Keras 2 layout)."""
    from ipusim.keras.engine.functional import Functional

    print_fn = print_fn or print
    if hasattr(model, "_ensure_built"):
        model._ensure_built()
    functional = isinstance(model, Functional)
    line_length = line_length or (98 if functional else 65)
    fractions = positions or ([0.33, 0.55, 0.67, 1.0] if functional else [0.45, 0.85, 1.0])
    cols = [int(line_length * p) if p <= 1 else int(p) for p in fractions]
    headers = ["Layer (type)", "Output Shape", "Param #"] + (["Connected to"] if functional else [])
    rows = _layer_rows(model)
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_fn(table_row(headers, cols))
    print_fn("=" * line_length)
    if functional:
        for t in model.inputs:
            layer = t.history.layer
            row = [f"{layer.name} ({type(layer).__name__})", _shape_text([t.shape]), "0", ""]
            print_fn(table_row(row, cols))
            print_fn("")
    seen: set[int] = set()
    for i, (layer, shapes, inbound) in enumerate(rows):
        params = 0 if id(layer) in seen or not layer.built else layer.count_params()
        seen.add(id(layer))
        fields = [f"{layer.name} ({type(layer).__name__})", _shape_text(shapes), f"{params}"]
        if functional:
            fields.append(", ".join(inbound))
        print_fn(table_row(fields, cols))
        print_fn("" if i < len(rows) - 1 else "=" * line_length)
    trainable = sum(w.spec.size for w in model.trainable_weights)
    total = sum(w.spec.size for w in model.weights)
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * line_length)
