"""Exporting for serving: a Keras model, a single-step function or a pipeline of functions.

Each export (1) traces the inference step for the exported batch size into an op graph, frozen
with the current weights, (2) simulates one execution of the on-device loop of ``iterations``
requests on the configured IPU system through the public lowering and engine path (the same one
``model.predict`` and custom loops use), and (3) writes the program, its arrays, the simulated
trace and figures atomically (:mod:`ipusim.serving.files`). It returns the loaded export.

The names and arguments mirror ``tensorflow.python.ipu.serving`` (``export_keras``,
``export_single_step``, ``export_pipeline``) and Keras' ``model.export_for_ipu_serving``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.ops._window import known_dims
from ipusim.graph.spec import TensorSpec, canonical_dtype
from ipusim.keras.engine.nest import flatten, map_structure
from ipusim.keras.engine.training import _positive_int as _positive
from ipusim.keras.extensions.serving import simulate_predict_execution
from ipusim.serving.files import check_export_dir, write_export
from ipusim.serving.host_steps import HostSteps, HostStepsModel, host_steps
from ipusim.serving.program import ExportError, encode_program
from ipusim.serving.served import ServedModel, load
from ipusim.serving.timing import timing_from_report
from ipusim.session.options import full_trace

__all__ = ["export_keras", "export_pipeline", "export_single_step"]


def _system_fields(report: Any, config: Any) -> dict[str, Any]:
    precision = config.ipusim.precision if config is not None else "fp32"
    return {"system": report.system_name, "precision": precision}


# ---------------------------------------------------------------------------------- Keras
def _keras_batch_size(model: Any, specs: list[TensorSpec], batch_size: int | None) -> int:
    if batch_size is not None:
        return _positive(batch_size, "batch_size")
    known = {s.shape[0] for s in specs if s.shape and s.shape[0] is not None}
    if len(known) == 1:
        return int(known.pop())
    raise ConfigurationError(
        f"Cannot export model {model.name!r}: the exported program is compiled for one batch "
        "size and none is known. Pass batch_size=... to the export, or give the model's inputs "
        "a batch size (keras.Input(..., batch_size=N))."
    )


def _keras_inputs(model: Any, batch_size: int | None) -> tuple[Any, list[TensorSpec], int]:
    """The model's input specs for the exported batch size (structure and flat), and that size.

    Raises:
        ConfigurationError: the model is not built, or no batch size is known.
    """
    structure = model._build_input_spec
    if structure is None:
        raise ConfigurationError(
            f"Model {model.name!r} must be built before it is exported: call "
            "model.build(input_shape) (or use keras.Input) first"
        )
    flat_specs = flatten(structure)
    batch = _keras_batch_size(model, flat_specs, batch_size)
    concrete = map_structure(
        lambda s: TensorSpec((batch, *s.shape[1:]), s.dtype, s.name), structure
    )
    return concrete, flat_specs, batch


def export_keras(
    model: Any,
    export_dir: Any,
    batch_size: int | None = None,
    output_names: Any = None,
    preprocessing_step: Any = None,
    preprocessing_step_signature: Any = None,
    postprocessing_step: Any = None,
    postprocessing_step_signature: Any = None,
) -> ServedModel | HostStepsModel:
    """Export a Keras model created in an ``IPUStrategy`` scope for serving.

    The on-device loop runs ``steps_per_execution`` (from ``model.compile``) requests per
    execution; a pipelined model serves them as one pipeline of that depth, as IPU TensorFlow.

    Args:
        model: the built Keras model.
        export_dir: a new or empty directory.
        batch_size: samples per request; default: the batch size of the model's inputs.
        output_names: names for the outputs (default: the model's output names).
        preprocessing_step / postprocessing_step (and their ``_signature``): functions run on
            the host before / after the IPU program (:mod:`ipusim.serving.host_steps`).

    Returns:
        The loaded export (:class:`ipusim.serving.ServedModel`): call it with one request
        (wrapped with the host steps when given).

    Raises:
        ValueError: the model was not created in an IPUStrategy scope, is not built, has no
            known batch size, or ``export_dir`` is not empty.
    """
    check_export_dir(export_dir)
    steps = host_steps("export_keras", preprocessing_step, preprocessing_step_signature,
                       postprocessing_step, postprocessing_step_signature)  # fmt: skip
    if not hasattr(model, "export_for_ipu_serving"):
        raise ConfigurationError(
            f"Model {getattr(model, 'name', model)!r} was not created inside an IPUStrategy "
            "scope, so it cannot be exported for IPU serving; create it in "
            "`with ipusim.IPUStrategy().scope():`"
        )
    concrete, flat_specs, batch = _keras_inputs(model, batch_size)
    iterations = _positive(model.steps_per_execution, "steps_per_execution")
    traced = model.trace(concrete, training=False)
    inputs, outputs = flatten(traced.inputs), flatten(traced.outputs)
    program, arrays = encode_program(traced.graph, inputs, outputs)

    # One execution of the on-device loop (model.last_simulation afterwards), every record kept
    # whatever trace_detail says: the per-request latencies are read from them.
    execution = simulate_predict_execution(model, concrete, iterations, keep_all_records=True)
    config, lowered, report = execution.lowered.config, execution.lowered, execution.report
    names = _input_names(model, flat_specs)
    out_names = list(output_names) if output_names is not None else _output_names(model, outputs)
    manifest = {
        "kind": "keras",
        "name": model.name,
        "batch_size": batch,
        "iterations": iterations,
        "inputs": [
            {"name": n, "shape": list(s.spec.shape), "dtype": s.spec.dtype}
            for n, s in zip(names, inputs, strict=True)
        ],
        "output_names": out_names,
        "single_output": not isinstance(traced.outputs, list | tuple | dict),
        "program": program,
        "pipeline": _keras_pipeline(model, lowered),
        "timing": timing_from_report(report, batch, iterations).to_dict(),
        "keras_config": _keras_config(model),
        **_system_fields(report, config),
        **(steps.manifest() if steps is not None else {}),
    }
    write_export(export_dir, manifest, arrays, report.trace.to_npz_bytes())
    return _served(export_dir, steps)


def _served(export_dir: Any, steps: HostSteps | None) -> ServedModel | HostStepsModel:
    """The loaded export, wrapped with its host steps when it has any."""
    served = load(export_dir)
    return steps.attach(served) if steps is not None else served


def _input_names(model: Any, specs: list[TensorSpec]) -> list[str]:
    names = getattr(model, "input_names", None)
    if isinstance(names, list) and len(names) == len(specs):
        return [str(n) for n in names]
    return [s.name or f"input_{i}" for i, s in enumerate(specs)]


def _output_names(model: Any, outputs: list[Any]) -> list[str]:
    try:
        names = list(model.output_names)
    except (AttributeError, NotImplementedError, TypeError):
        names = []
    return names if len(names) == len(outputs) else [f"output_{i}" for i in range(len(outputs))]


def _keras_pipeline(model: Any, lowered: Any) -> dict[str, Any] | None:
    program = lowered.program
    if not program.pipelined:
        return None
    spec = program.pipeline
    mapping = [int(stage.ipu) for stage in spec.stages]
    return {"stages": len(mapping), "device_mapping": mapping, "schedule": str(spec.schedule)}


def _keras_config(model: Any) -> Any:
    """The model's Keras config when it has a JSON one (informational; the program is what runs)."""
    import json

    try:
        config = model.get_config()
        json.dumps(config)
    except (NotImplementedError, TypeError, ValueError, AttributeError):
        return None
    base = next(
        (c for c in type(model).__mro__ if c.__module__.startswith("ipusim.keras.engine")),
        type(model),
    )
    return {"class_name": base.__name__, "config": config}


# ------------------------------------------------------------------------------- functions
def _signature(
    fn: Any, signature: Any, input_dataset: Any, skip: int, what: str
) -> list[TensorSpec]:
    """The input specs of ``fn`` (its arguments after the first ``skip``), as IPU TensorFlow
    resolves them: the signature, the dataset's element spec, or the tf.function's own."""
    if signature is not None and input_dataset is not None:
        raise ConfigurationError(
            f"{what}: pass either the input signature or input_dataset, not both"
        )
    if input_dataset is not None:
        from ipusim.data import Dataset

        if not isinstance(input_dataset, Dataset):
            raise InvalidTypeError(f"{what}: input_dataset must be a tf.data.Dataset, received "
                            f"{type(input_dataset).__name__}")  # fmt: skip
        signature = input_dataset.element_spec
    if signature is None:
        signature = getattr(fn, "input_signature", None) or getattr(fn, "_options", {}).get(
            "input_signature"
        )
    if signature is None:
        raise ConfigurationError(
            f"{what}: missing the input signature of {getattr(fn, '__name__', fn)!r}; pass "
            "predict_step_signature=(tf.TensorSpec(shape, dtype), ...)"
        )
    flat = [signature] if isinstance(signature, TensorSpec) else list(flatten(signature))
    if skip and len(flat) > skip:
        flat = flat[skip:]
    specs = []
    for i, spec in enumerate(flat):
        shape = getattr(spec, "shape", None)
        if shape is None or any(d is None for d in tuple(shape)):
            raise ConfigurationError(
                f"{what}: input {i} needs a fully known shape (the program is compiled for one "
                f"shape), received {spec!r}"
            )
        name = getattr(spec, "name", None) or f"input_{i}"
        specs.append(TensorSpec(tuple(int(d) for d in shape), canonical_dtype(spec.dtype), name))
    return specs


def _call_chain(stages: Sequence[Callable[..., Any]], leading: Sequence[Any]) -> Callable[..., Any]:
    """One function running the stages in turn (each takes the previous one's outputs)."""

    def run(*args: Any) -> Any:
        out: Any = stages[0](*leading, *args)
        for stage in stages[1:]:
            out = stage(*out) if isinstance(out, list | tuple) else stage(out)
        return out

    return run


def _export_function(
    kind: str,
    name: str,
    chain: Callable[..., Any],
    specs: list[TensorSpec],
    export_dir: Any,
    iterations: int,
    device_loop: Callable[[Any, Any], Callable[[], Any]],
    pipeline: dict[str, Any] | None,
    steps: HostSteps | None = None,
) -> ServedModel | HostStepsModel:
    from ipusim.compat.ipu import ipu_infeed_queue, ipu_outfeed_queue
    from ipusim.compat.runtime import simulation as runtime_simulation
    from ipusim.compat.runtime.function import Function, _trace
    from ipusim.config import active_config
    from ipusim.data import Dataset
    from ipusim.strategy import IPUStrategy

    zeros = [np.zeros(known_dims(s.shape), s.dtype) for s in specs]
    traced, _ = _trace(chain, tuple(zeros), {}, device=False)
    compiled = traced.compiled
    if not compiled.output_symbols:
        raise ExportError(f"{name}: the exported function returns no tensor to serve")
    program, arrays = encode_program(
        compiled.graph, compiled.arg_placeholders, compiled.output_symbols
    )
    dataset = Dataset.from_tensors(tuple(zeros)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(dataset)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = IPUStrategy()
    with full_trace():  # every record of the one execution: the latencies are read from them
        with strategy.scope():
            strategy.run(Function(device_loop(infeed, outfeed)))
        outfeed.dequeue()
        report = runtime_simulation.last_simulation()
    if report is None:
        raise RuntimeError(f"{name}: the serving loop was not simulated")
    batch = int(known_dims(specs[0].shape)[0]) if specs and specs[0].shape else 1
    manifest = {
        "kind": kind,
        "name": name,
        "batch_size": batch,
        "iterations": iterations,
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in specs],
        "output_names": [f"output_{i}" for i in range(len(compiled.output_symbols))],
        "single_output": len(flatten(compiled.outputs)) == 1
        and not isinstance(compiled.outputs, list | tuple),
        "program": program,
        "pipeline": pipeline,
        "timing": timing_from_report(report, batch, iterations).to_dict(),
        **_system_fields(report, active_config()),
        **(steps.manifest() if steps is not None else {}),
    }
    write_export(export_dir, manifest, arrays, report.trace.to_npz_bytes())
    return _served(export_dir, steps)


def export_single_step(
    predict_step: Callable[..., Any],
    export_dir: Any,
    iterations: int,
    predict_step_signature: Any = None,
    input_signature: Any = None,
    input_dataset: Any = None,
    preprocessing_step: Any = None,
    preprocessing_step_signature: Any = None,
    postprocessing_step: Any = None,
    postprocessing_step_signature: Any = None,
) -> ServedModel | HostStepsModel:
    """Export ``predict_step`` run in an on-device loop of ``iterations`` steps.

    Args:
        predict_step: the function (or tf.function) computing one request's outputs.
        export_dir: a new or empty directory.
        iterations: requests per execution of the loop.
        predict_step_signature / input_signature: ``tf.TensorSpec`` of each argument (either
            name; SDK versions differ).
        input_dataset: alternatively, a dataset whose element spec is the signature.
        preprocessing_step / postprocessing_step (and their ``_signature``): functions run on
            the host before / after the IPU program (:mod:`ipusim.serving.host_steps`).

    Returns:
        The loaded export (:class:`ipusim.serving.ServedModel`, wrapped with the host steps
        when given). Its timing counts the leading dimension of the first input as the samples
        of one request.
    """
    check_export_dir(export_dir)
    iterations = _positive(iterations, "iterations")
    what = "export_single_step"
    steps = host_steps(what, preprocessing_step, preprocessing_step_signature,
                       postprocessing_step, postprocessing_step_signature)  # fmt: skip
    specs = _signature(
        predict_step, predict_step_signature or input_signature, input_dataset, 0, what
    )
    step = getattr(predict_step, "python_function", predict_step)

    def device_loop(infeed: Any, outfeed: Any) -> Callable[[], Any]:
        from ipusim.compat.ipu import loops

        def body(*args: Any) -> Any:
            return outfeed.enqueue(step(*args))

        def loop() -> Any:
            return loops.repeat(iterations, body, [], infeed)

        return loop

    name = getattr(step, "__name__", "predict_step")
    return _export_function("single_step", name, step, specs, export_dir, iterations,
                            device_loop, None, steps)  # fmt: skip


def export_pipeline(
    computational_stages: Sequence[Callable[..., Any]],
    export_dir: Any,
    iterations: int,
    inputs: Any = None,
    device_mapping: Any = None,
    pipeline_schedule: Any = None,
    poplar_options: Any = None,
    name: str | None = None,
    predict_step_signature: Any = None,
    input_signature: Any = None,
    input_dataset: Any = None,
    preprocessing_step: Any = None,
    preprocessing_step_signature: Any = None,
    postprocessing_step: Any = None,
    postprocessing_step_signature: Any = None,
) -> ServedModel | HostStepsModel:
    """Export ``computational_stages`` as an inference pipeline of depth ``iterations``.

    Args:
        computational_stages: one function per stage; each takes the previous stage's outputs.
        export_dir: a new or empty directory.
        iterations: requests per execution (the pipeline's depth).
        inputs: arguments passed to the first stage before the fed inputs.
        device_mapping: the IPU of each stage (default: stage i on IPU i).
        pipeline_schedule: ``PipelineSchedule`` (default Grouped).
        poplar_options: accepted for compatibility.
        name: the pipeline's name.
        predict_step_signature / input_signature / input_dataset: as
            :func:`export_single_step`, for the first stage's fed arguments.
        preprocessing_step / postprocessing_step (and their ``_signature``): as
            :func:`export_single_step`.

    Returns:
        The loaded export (:class:`ipusim.serving.ServedModel`, wrapped with the host steps
        when given).
    """
    check_export_dir(export_dir)
    iterations = _positive(iterations, "iterations")
    what = "export_pipeline"
    steps = host_steps(what, preprocessing_step, preprocessing_step_signature,
                       postprocessing_step, postprocessing_step_signature)  # fmt: skip
    stages = [getattr(s, "python_function", s) for s in computational_stages]
    if not stages or not all(callable(s) for s in stages):
        raise ConfigurationError(
            f"{what}: computational_stages must be a non-empty list of functions"
        )
    leading = list(inputs or [])
    specs = _signature(stages[0], predict_step_signature or input_signature, input_dataset,
                       len(leading), what)  # fmt: skip
    mapping = list(device_mapping) if device_mapping is not None else list(range(len(stages)))

    def device_loop(infeed: Any, outfeed: Any) -> Callable[[], Any]:
        from ipusim.compat.ipu import pipelining_ops

        def loop() -> Any:
            return pipelining_ops.pipeline(
                computational_stages=stages,
                gradient_accumulation_count=iterations,
                inputs=leading or None,
                infeed_queue=infeed,
                outfeed_queue=outfeed,
                device_mapping=mapping,
                pipeline_schedule=pipeline_schedule,
                name=name,
            )

        return loop

    schedule = getattr(pipeline_schedule, "name", "Grouped")
    pipeline = {"stages": len(stages), "device_mapping": mapping, "schedule": str(schedule).lower()}
    return _export_function("pipeline", name or "pipeline", _call_chain(stages, leading), specs,
                            export_dir, iterations, device_loop, pipeline, steps)  # fmt: skip
