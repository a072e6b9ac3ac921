"""A loaded export: a callable that runs the inference program and knows its simulated timing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ipusim.errors import InputDataError, InvalidTypeError, IPUSimError, ModelFileError
from ipusim.graph.execute import ExecContext, Executor
from ipusim.graph.ops._window import known_dims
from ipusim.graph.spec import TensorSpec
from ipusim.serving.files import MANIFEST, read_export
from ipusim.serving.program import NODE_ERRORS, decode_program
from ipusim.serving.timing import ServingTiming
from ipusim.trace import Trace

__all__ = ["ServedModel", "load"]

#: What a damaged program (that spec inference let through) can raise on its first run; errors
#: of the user's kind (an IPUSimError) are a damaged export here too, as the inputs are zeros.
_RUN_ERRORS = (IPUSimError, ZeroDivisionError, *NODE_ERRORS)


class ServedModel:
    """The runtime function of an exported model (what ``ipusim.serving.load`` returns).

    Call it with one request (one array per input, each of the exported batch size) as the
    function IPU TensorFlow's export returns: ``served(x1, x2)``. It runs the exported inference
    program (weights frozen at export) through the same kernels as ``model.predict``.

    Attributes:
        name: the model's or function's name.
        kind: ``"keras"``, ``"single_step"`` or ``"pipeline"``.
        input_specs: one TensorSpec per input (batch included).
        output_names: names of the outputs.
        batch_size: samples per request.
        iterations: requests per execution of the on-device loop.
        timing: the simulated serving figures (:class:`ServingTiming`).
        pipeline: the pipeline (stages, device mapping, schedule), or None.
        manifest: everything ``serving.json`` holds.
    """

    def __init__(self, manifest: dict[str, Any], arrays: dict[str, np.ndarray], trace_path: Any):
        self.manifest = manifest
        self.name = str(manifest["name"])
        self.kind = str(manifest["kind"])
        self.input_specs = tuple(
            TensorSpec(tuple(i["shape"]), i["dtype"], i["name"]) for i in manifest["inputs"]
        )
        self.output_names = list(manifest["output_names"])
        self.batch_size = int(manifest["batch_size"])
        self.iterations = int(manifest["iterations"])
        self.timing = ServingTiming.from_dict(manifest["timing"])
        self.pipeline = manifest.get("pipeline")
        self._trace_path = trace_path
        self._trace: Trace | None = None
        program = decode_program(manifest["program"], arrays, self.name)
        _check_signature(program, self.input_specs, len(self.output_names))
        self._executor = Executor(program.graph, list(program.outputs), list(program.inputs))
        self._single_output = bool(manifest.get("single_output", len(self.output_names) == 1))
        self._requests = 0

    @property
    def trace(self) -> Trace:
        """The simulated execution of ``iterations`` requests (loaded on first use)."""
        if self._trace is None:
            try:
                self._trace = Trace.load(self._trace_path)
            except IPUSimError:
                raise
            except _RUN_ERRORS as exc:  # Trace.load's own checks should have said it
                raise ModelFileError(
                    f"{str(self._trace_path)!r}: the simulated execution cannot be read "
                    f"({type(exc).__name__}: {exc}); export the model again"
                ) from None
        return self._trace

    def _check(self, args: tuple[Any, ...]) -> list[np.ndarray]:
        if len(args) != len(self.input_specs):
            raise InvalidTypeError(
                f"{self.name}: the exported program takes {len(self.input_specs)} input(s) "
                f"({', '.join(s.name or '?' for s in self.input_specs)}), received {len(args)}"
            )
        arrays = []
        for spec, value in zip(self.input_specs, args, strict=True):
            array = np.asarray(value)
            if array.shape != spec.shape:
                raise InputDataError(
                    f"{self.name}: input {spec.name!r} must have shape {spec.shape} (the program "
                    f"was compiled for batch size {self.batch_size}), received {array.shape}"
                )
            arrays.append(np.ascontiguousarray(array, dtype=spec.dtype))
        return arrays

    def __call__(self, *args: Any) -> Any:
        """Serve one request: the outputs for these inputs."""
        if len(args) == 1 and isinstance(args[0], list | tuple) and len(self.input_specs) > 1:
            args = tuple(args[0])
        values = self._executor.run(self._check(args), ExecContext(False, self._requests))
        self._requests += 1
        return values[0] if self._single_output else list(values)

    def __repr__(self) -> str:
        return f"<ServedModel {self.name!r} ({self.kind}): {self.timing.summary()}>"


def _check_signature(program: Any, specs: tuple[TensorSpec, ...], outputs: int) -> None:
    """The program's placeholders are the manifest's inputs; it has one output per name."""
    found = [(tuple(s.spec.shape), s.spec.dtype) for s in program.inputs]
    wanted = [(tuple(s.shape), s.dtype) for s in specs]
    if found != wanted:
        raise ModelFileError(
            f"field 'inputs': the manifest declares inputs {wanted}, the program's placeholders "
            f"are {found}"
        )
    if len(program.outputs) != outputs:
        raise ModelFileError(
            f"field 'output_names': {outputs} names for the program's {len(program.outputs)} "
            "outputs"
        )


def load(export_dir: Any) -> ServedModel:
    """Load an export written by ``export_for_ipu_serving`` / ``ipusim.serving.export_*``.

    Every file is checked before use (:func:`~ipusim.serving.files.read_export`), the program is
    rebuilt node by node through the ops' own spec inference, and it serves one request of zeros
    before it is returned, so a damaged export fails here, never at the first real request.

    Returns:
        The callable :class:`ServedModel` with its simulated timing.

    Raises:
        ExportNotFoundError: ``export_dir`` holds no export (a ``FileNotFoundError``).
        ModelFileError: the export is damaged; the message names the file and the field.
    """
    manifest, arrays, trace_path = read_export(export_dir)
    where = Path(os.fspath(export_dir)) / MANIFEST
    try:
        served = ServedModel(manifest, arrays, trace_path)
        served._executor.run(
            [np.zeros(known_dims(s.shape), s.dtype) for s in served.input_specs],
            ExecContext(False, 0),
        )
    except ModelFileError as exc:
        raise ModelFileError(f"{str(where)!r}, {exc}. Export the model again.") from None
    except _RUN_ERRORS as exc:
        raise ModelFileError(
            f"{str(where)!r}: the exported program cannot run ({type(exc).__name__}: {exc}); "
            "the export is damaged. Export the model again."
        ) from None
    return served
