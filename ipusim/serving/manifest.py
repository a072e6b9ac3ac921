"""Checking an export's ``serving.json`` before anything is built from it.

Every field the loader reads is checked for type and plausibility (counts >= 1, shapes of
positive sizes whose batch dimension is the export's batch size, known dtypes, a simulated
execution of positive finite length whose request latencies fit inside it, a pipeline whose
device mapping has one IPU per stage). A failure is a
:class:`~ipusim.errors.ModelFileError` naming the file, the field and the fix.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np

from ipusim.errors import ModelFileError

__all__ = ["KINDS", "ExportNotFoundError", "check_manifest", "export_error"]

#: What an export can hold.
KINDS = ("keras", "single_step", "pipeline")

_FIX = "The export is damaged or was not written by ipusim; export the model again."


class ExportNotFoundError(ModelFileError, FileNotFoundError):
    """A folder given to ``ipusim.serving.load`` holds no ipusim serving export."""


def export_error(path: Any, field: str, problem: str, fix: str = _FIX) -> ModelFileError:
    """A :class:`ModelFileError` naming the export file, the field, the problem and the fix."""
    return ModelFileError(f"{str(path)!r}, {field}: {problem}. {fix}")


def _count(manifest: dict[str, Any], key: str, path: Any, low: int = 1) -> int:
    value = manifest.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise export_error(path, f"field {key!r}", f"expected an integer >= {low}, found {value!r}")
    return value


def _dtype(value: object, path: Any, field: str) -> str:
    try:
        dtype = np.dtype(value) if isinstance(value, str) else None
    except TypeError:
        dtype = None
    if not isinstance(value, str) or dtype is None or dtype.hasobject or dtype.kind not in "biuf":
        raise export_error(path, field, f"expected a numeric dtype name, found {value!r}")
    return value


def _check_inputs(manifest: dict[str, Any], path: Any, batch: int) -> None:
    inputs = manifest.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise export_error(path, "field 'inputs'", f"expected a non-empty list, found {inputs!r}")
    for i, entry in enumerate(inputs):
        field = f"field 'inputs[{i}]'"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise export_error(path, field, f"expected {{name, shape, dtype}}, found {entry!r}")
        shape = entry.get("shape")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape
        ):
            raise export_error(path, f"{field} shape", f"expected sizes >= 1, found {shape!r}")
        if i == 0 and manifest.get("kind") != "keras" and (shape[0] if shape else 1) != batch:
            raise export_error(path, f"{field} shape", f"batch size {batch} expected, {shape!r}")
        if manifest.get("kind") == "keras" and shape[:1] != [batch]:
            raise export_error(path, f"{field} shape", f"batch size {batch} expected, {shape!r}")
        _dtype(entry.get("dtype"), path, f"{field} dtype")


def _check_timing(manifest: dict[str, Any], path: Any, batch: int, iterations: int) -> None:
    timing = manifest.get("timing")
    if not isinstance(timing, dict):
        raise export_error(path, "field 'timing'", f"expected an object, found {timing!r}")
    if timing.get("batch_size") != batch or timing.get("iterations") != iterations:
        raise export_error(
            path,
            "field 'timing'",
            f"its batch_size / iterations ({timing.get('batch_size')!r}, "
            f"{timing.get('iterations')!r}) differ from the export's ({batch}, {iterations})",
        )
    if "replicas" in timing:
        _count(timing, "replicas", path)
    seconds = timing.get("execution_s")
    if not _positive_finite(seconds):
        raise export_error(
            path, "field 'timing.execution_s'", f"expected seconds > 0, found {seconds!r}"
        )
    latency = timing.get("request_latency_s")
    if not isinstance(latency, list) or len(latency) != iterations:
        raise export_error(
            path, "field 'timing.request_latency_s'", f"expected {iterations} latencies"
        )
    for i, value in enumerate(latency):
        # A request's inputs leave the host and its results return within the execution.
        if not _positive_finite(value) or value > seconds * (1 + 1e-9):
            raise export_error(
                path,
                f"field 'timing.request_latency_s[{i}]'",
                f"expected seconds in (0, execution_s = {seconds}], found {value!r}",
            )


def _positive_finite(value: object) -> TypeGuard[float]:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
    )


def _check_pipeline(manifest: dict[str, Any], path: Any) -> None:
    pipeline = manifest.get("pipeline")
    if pipeline is None:
        return
    stages = pipeline.get("stages") if isinstance(pipeline, dict) else None
    mapping = pipeline.get("device_mapping") if isinstance(pipeline, dict) else None
    if (
        isinstance(stages, bool)
        or not isinstance(stages, int)
        or stages < 1
        or not isinstance(mapping, list)
        or len(mapping) != stages
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in mapping)
        or not isinstance(pipeline.get("schedule"), str)
    ):
        raise export_error(
            path,
            "field 'pipeline'",
            f"expected {{stages >= 1, device_mapping: one IPU >= 0 per stage, schedule}}, "
            f"found {pipeline!r}",
        )


def check_manifest(manifest: Any, path: Any, format_name: str, version: int) -> dict[str, Any]:
    """``manifest`` if every field the loader reads is present and plausible.

    Raises:
        ModelFileError: naming the field that is not.
    """
    if not isinstance(manifest, dict):
        raise export_error(path, "contents", f"expected a JSON object, found {type(manifest)}")
    found_version = manifest.get("version")
    if manifest.get("format") != format_name:
        raise export_error(
            path, "field 'format'", f"expected {format_name!r}, found {manifest.get('format')!r}"
        )
    if (
        _positive_finite(found_version)
        and isinstance(found_version, int)
        and found_version > version
    ):
        raise ModelFileError(
            f"{str(path)!r} was written by a newer ipusim (export format version "
            f"{found_version}, this ipusim reads up to {version}); upgrade ipusim"
        )
    _count(manifest, "version", path)
    if manifest.get("kind") not in KINDS:
        raise export_error(path, "field 'kind'", f"expected one of {KINDS}")
    if not isinstance(manifest.get("name"), str):
        raise export_error(path, "field 'name'", "expected a string")
    batch = _count(manifest, "batch_size", path)
    iterations = _count(manifest, "iterations", path)
    _check_inputs(manifest, path, batch)
    names = manifest.get("output_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise export_error(path, "field 'output_names'", "expected a non-empty list of names")
    if not isinstance(manifest.get("single_output", False), bool):
        raise export_error(path, "field 'single_output'", "expected true or false")
    if not isinstance(manifest.get("program"), dict):
        raise export_error(path, "field 'program'", "expected an object")
    _check_timing(manifest, path, batch, iterations)
    _check_pipeline(manifest, path)
    return manifest
