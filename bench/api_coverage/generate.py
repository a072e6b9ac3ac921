"""List the public TensorFlow / Keras names ipusim's coverage is measured against.

Run in the separate TensorFlow environment (TensorFlow CPU 2.x and tf-keras, the Keras 2 of IPU
TensorFlow; neither is ever a dependency of ipusim)::

    /work/tfvenv/bin/python bench/api_coverage/generate.py

It writes ``bench/api_coverage/tf_api.json``: a sorted list of ``{"module", "name", "kind",
"signature"}`` entries, one per public name of the modules in :data:`MODULES` (``tf.keras.*`` is
read from ``tf_keras``, the Keras IPU TensorFlow 2 ships). ``kind`` is ``module``, ``class``,
``function`` or ``constant``; ``signature`` is ``inspect.signature`` without annotations (a
class's is its constructor's), or null when Python cannot tell.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

OUT = Path(__file__).resolve().parent / "tf_api.json"

#: The namespaces listed: public name -> attribute path from ``tf`` (or ``tf_keras`` for keras).
MODULES = (
    "tf",
    "tf.data",
    "tf.data.experimental",
    "tf.nn",
    "tf.math",
    "tf.linalg",
    "tf.random",
    "tf.summary",
    "tf.config",
    "tf.config.experimental",
    "tf.distribute",
    "tf.keras",
    "tf.keras.layers",
    "tf.keras.losses",
    "tf.keras.metrics",
    "tf.keras.optimizers",
    "tf.keras.optimizers.schedules",
    "tf.keras.callbacks",
    "tf.keras.preprocessing.sequence",
    "tf.keras.preprocessing.text",
    "tf.keras.preprocessing.image",
    "tf.keras.datasets",
    "tf.keras.backend",
    "tf.keras.utils",
    "tf.keras.mixed_precision",
    "tf.keras.applications",
)


def _namespace(tf: ModuleType, keras: ModuleType, public: str) -> Any:
    parts = public.split(".")
    if parts[:2] == ["tf", "keras"]:
        obj, rest = keras, parts[2:]
    else:
        obj, rest = tf, parts[1:]
    for part in rest:
        obj = getattr(obj, part)
    return obj


def _kind(value: Any) -> str:
    if inspect.ismodule(value):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "constant"


def _signature(value: Any) -> str | None:
    """``(a, b=1, *args, **kwargs)`` without annotations, or None when Python cannot tell."""
    if not callable(value) or inspect.ismodule(value):
        return None
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return text if len(text) <= 400 else text[:397] + "..."


def _entries(tf: ModuleType, keras: ModuleType) -> list[dict[str, Any]]:
    entries = []
    for public in MODULES:
        space = _namespace(tf, keras, public)
        for name in sorted(dir(space)):
            if name.startswith("_"):
                continue
            value = getattr(space, name)
            entry = {"module": public, "name": name, "kind": _kind(value)}
            entry["signature"] = _signature(value)
            entries.append(entry)
    entries.extend(_tf1_optimizers(tf))
    return sorted(entries, key=lambda e: (e["module"], e["name"]))


def _tf1_optimizers(tf: ModuleType) -> list[dict[str, Any]]:
    """The optimizer classes of ``tf.compat.v1.train`` (the TF1 optimizers Keras wraps)."""
    train = tf.compat.v1.train
    out = []
    for name in sorted(dir(train)):
        value = getattr(train, name)
        if inspect.isclass(value) and name.endswith("Optimizer"):
            entry = {"module": "tf.compat.v1.train", "name": name, "kind": "class"}
            entry["signature"] = _signature(value)
            out.append(entry)
    return out


def dump_listing(source: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """The JSON text of a listing: its source, then one entry per line (small diffs)."""
    lines = [json.dumps(e, sort_keys=True) for e in entries]
    return (
        '{"source": '
        + json.dumps(source, sort_keys=True)
        + ',\n"names": [\n'
        + ",\n".join(lines)
        + "\n]}\n"
    )


def main() -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    import tf_keras

    entries = _entries(tf, tf_keras)
    header = {"tensorflow": tf.__version__, "tf_keras": tf_keras.__version__}
    OUT.write_text(dump_listing(header, entries))
    print(f"{len(entries)} names -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
