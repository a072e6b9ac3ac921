"""``pipelining_ops.pipeline``: a pipelined program built from stage functions.

**Tracing.** All the stages are traced into ONE graph, each stage call recorded as a layer
invocation (``graph.invoke``), so every node — the stage's own ops, the Keras layers it calls and,
after autodiff, its backward pass — is attributed to its stage, exactly as the Keras path
attributes nodes to ``PipelineStage`` scopes. Stage 0 receives the non-varying ``inputs`` and then
the infeed element (a dict element as keyword arguments); every later stage receives the previous
stage's outputs. A slot holding a list of functions is a set of *concurrent* stages: each receives
the same arguments and the next stage receives their outputs concatenated. With an
``optimizer_function`` the loss it returns is differentiated with respect to the variables.

**Numerics.** One pipeline run executes the graph once per micro-batch (stages in order, so the
math is that of the unpipelined model), accumulates the gradients over
``gradient_accumulation_count`` micro-batches with ``reduction_method`` (and
``gradient_accumulation_dtype``) and applies them once; ``repeat_count`` runs per call. The
outfeed receives the last stage's outputs (masked by ``outfeed_mask``) or the loss
(``outfeed_loss``) per micro-batch, or their sum per run (``accumulate_outfeed``). With replication
each micro-batch runs once per replica on its own infeed element; outfeed elements gain a replica
axis and the gradients are averaged (the optimizer must be a cross-replica one).

**Timing.** The graph is lowered by :func:`ipusim.lowering.lower` with a ``PipelineSpec`` built
from the stage invocations, the ``device_mapping`` and the schedule, with the offloading options
as its ``DistributionSpec``; one call is ``gradient_accumulation_count × repeat_count`` steps.
Concurrent stages are modelled in :mod:`.pipeline_timing`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ipusim.compat.runtime import context
from ipusim.compat.runtime.compiled import CompiledGraph
from ipusim.compat.runtime.context import Operation, TraceContext
from ipusim.compat.runtime.loops import infeed_args
from ipusim.compat.runtime.ops_control import call_program
from ipusim.compat.runtime.optimizers import (
    ConcreteApply,
    accumulation_of,
    compute_gradients_symbolic,
    has_cross_replica,
    innermost,
    present_gradients,
)
from ipusim.compat.runtime.pipeline_checks import (
    OptimizerFunctionOutput,
    PipelineArgs,
    check_pipeline_args,
)
from ipusim.errors import ConfigurationError, IncompatibleStateError, InvalidTypeError
from ipusim.graph.graph import Graph, Symbol, to_symbol
from ipusim.graph.ops.update import GradientAccumulator, add_update, run_update
from ipusim.graph.spec import TensorSpec
from ipusim.keras.engine.nest import flatten, pack_sequence_as
from ipusim.keras.extensions.gradient_accumulation import GradientAccumulationReductionMethod

__all__ = ["OptimizerFunctionOutput", "pipeline"]


def pipeline(
    computational_stages: Any,
    gradient_accumulation_count: int | None = None,
    gradient_accumulation_dtype: Any = None,
    repeat_count: int = 1,
    batch_serialization_iterations: int = 1,
    inputs: Any = None,
    infeed_queue: Any = None,
    outfeed_queue: Any = None,
    optimizer_function: Any = None,
    device_mapping: Any = None,
    pipeline_schedule: Any = None,
    recomputation_mode: Any = None,
    forward_propagation_stages_poplar_options: Any = None,
    backward_propagation_stages_poplar_options: Any = None,
    weight_update_poplar_options: Any = None,
    offload_weight_update_variables: bool | None = None,
    replicated_optimizer_state_sharding: bool = False,
    offload_activations: bool | None = None,
    offload_gradient_accumulation_buffers: bool | None = None,
    replicated_weight_sharding: bool | None = None,
    offload_weights: bool | None = None,
    continuous_weight_updates: bool = False,
    outfeed_loss: bool = False,
    accumulate_outfeed: bool = False,
    accumulate_outfeed_dtype: Any = None,
    outfeed_mask: Any = None,
    reduction_method: Any = GradientAccumulationReductionMethod.SUM,
    name: str | None = None,
) -> Operation:
    """Run ``computational_stages`` as a pipeline over IPUs (see the module docstring).

    Returns:
        The pipeline operation (the pipeline runs when the traced function executes; called
        outside a traced function it runs at once).
    """
    options = dict(
        forward_propagation_stages_poplar_options=forward_propagation_stages_poplar_options,
        backward_propagation_stages_poplar_options=backward_propagation_stages_poplar_options,
        weight_update_poplar_options=weight_update_poplar_options,
        offload_weight_update_variables=offload_weight_update_variables,
        replicated_optimizer_state_sharding=replicated_optimizer_state_sharding,
        offload_activations=offload_activations,
        offload_gradient_accumulation_buffers=offload_gradient_accumulation_buffers,
        replicated_weight_sharding=replicated_weight_sharding,
        offload_weights=offload_weights,
        continuous_weight_updates=continuous_weight_updates,
        outfeed_loss=outfeed_loss,
        accumulate_outfeed=accumulate_outfeed,
        accumulate_outfeed_dtype=accumulate_outfeed_dtype,
        outfeed_mask=outfeed_mask,
        reduction_method=reduction_method,
        gradient_accumulation_dtype=gradient_accumulation_dtype,
    )
    args = check_pipeline_args(
        computational_stages,
        gradient_accumulation_count,
        repeat_count,
        batch_serialization_iterations,
        infeed_queue,
        outfeed_queue,
        optimizer_function,
        device_mapping,
        pipeline_schedule,
        recomputation_mode,
        options,
    )
    outer = context.current()
    if outer is None:
        from ipusim.compat.runtime.function import run_device_callable

        done: Operation = run_device_callable(
            lambda: _build(args, inputs, infeed_queue, outfeed_queue, optimizer_function, options),
            "pipeline",
        )
        return done
    return _build(args, inputs, infeed_queue, outfeed_queue, optimizer_function, options)


class _Stage:
    """Stands for one stage function in the graph's invocation records."""

    def __init__(self, index: int, fn: Any) -> None:
        self.name = f"pipeline_stage_{index}"
        self.fn = fn


def _next_args(outputs: Any) -> tuple[list[Any], dict[str, Any]]:
    if outputs is None:
        return [], {}
    if isinstance(outputs, dict):
        return [], dict(outputs)
    if isinstance(outputs, list | tuple):
        return list(outputs), {}
    return [outputs], {}


def _call_stage(
    graph: Graph, index: int, fn: Any, args: list[Any], kwargs: dict[str, Any]
) -> tuple[Any, int]:
    symbols = [s for s in flatten([args, kwargs]) if isinstance(s, Symbol)]
    with graph.invoke(_Stage(index, fn), symbols):
        position = len(graph.invocations) - 1
        try:
            outputs = fn(*args, **kwargs)
        except ValueError as exc:
            if "belongs to graph" in str(exc):
                raise ConfigurationError(
                    f"Trying to capture a tensor computed outside the pipeline ({exc}), which is "
                    "not a resource. This tensor needs to be passed as either part of the `inputs` "
                    "or `infeed_queue` of the pipeline."
                ) from None
            raise
    return outputs, position


def _build(
    args: PipelineArgs,
    inputs: Any,
    infeed_queue: Any,
    outfeed_queue: Any,
    optimizer_function: Any,
    options: dict[str, Any],
) -> Operation:
    outer = context.current()
    assert outer is not None  # pipeline() traces into run_device_callable's context otherwise
    outer_inputs = [to_symbol(v, outer.graph) for v in flatten(inputs)] if inputs else []
    graph = Graph("pipeline")
    ctx = TraceContext(graph, "pipeline", parent=outer)
    invocation_stage: dict[int, int] = {}
    with context.tracing(ctx):
        placeholders = [graph.placeholder(TensorSpec(s.shape, s.dtype)) for s in outer_inputs]
        stage_args: list[Any] = list(placeholders)
        stage_kwargs: dict[str, Any] = {}
        if infeed_queue is not None:
            extra_args, stage_kwargs = infeed_args(infeed_queue._dequeue())
            stage_args += extra_args
        outputs: Any = None
        for slot, group in zip(args.slots, args.groups):
            functions = slot if isinstance(slot, list | tuple) else [slot]
            results = []
            for physical, fn in zip(group, functions):
                out, position = _call_stage(graph, physical, fn, stage_args, stage_kwargs)
                invocation_stage[position] = physical
                results.append(out)
            if len(results) == 1:
                outputs = results[0]
            else:
                outputs = [leaf for out in results for leaf in flatten(_next_args(out))]
            stage_args, stage_kwargs = _next_args(outputs)
        runtime = PipelineRuntime(args, ctx, invocation_stage, placeholders, outfeed_queue, options)
        runtime.attach(outputs, optimizer_function, infeed_queue)
    holder, _ = call_program("ipu_pipeline", runtime, outer_inputs, [])
    outer.add_side_effect(holder)
    outer.segments.append(runtime)
    return Operation("pipeline", holder)


class PipelineRuntime:
    """A traced pipeline: its graph, what it fetches per micro-batch, and how it is applied."""

    def __init__(
        self,
        args: PipelineArgs,
        ctx: TraceContext,
        invocation_stage: dict[int, int],
        placeholders: list[Symbol],
        outfeed_queue: Any,
        options: dict[str, Any],
    ) -> None:
        self.args = args
        self.ctx = ctx
        self.graph = ctx.graph
        self.invocation_stage = invocation_stage
        self.placeholders = placeholders
        self.outfeed = outfeed_queue
        self.options = options
        self.infeed: Any = None
        self.optimizer: Any = None
        self.variables: list[Any] = []
        self.outfeed_values: list[Symbol] = []
        self.outfeed_structure: Any = None
        self.loss: Symbol | None = None
        self.grads: list[Symbol] = []
        self.update: Symbol | None = None  # the update phase's last node (add_update)
        self.compiled: CompiledGraph | None = None
        self.runs = 0

    # ------------------------------------------------------------------ tracing
    def attach(self, outputs: Any, optimizer_function: Any, infeed_queue: Any) -> None:
        """Add the loss, gradients and outfeed values to the traced stages."""
        self.infeed = infeed_queue
        graph = self.graph
        mask = self.options.get("outfeed_mask")
        flat_outputs = [o for o in flatten(outputs) if o is not None]
        if optimizer_function is not None:
            spread, named = _next_args(outputs)
            result = optimizer_function(*spread, **named)
            if not isinstance(result, OptimizerFunctionOutput):
                raise InvalidTypeError(
                    "optimizer_function must return an OptimizerFunctionOutput(opt, loss), "
                    f"returned {type(result).__name__}"
                )
            self._gradients(result)
        if self.options.get("outfeed_loss"):
            if self.outfeed is None:
                raise ConfigurationError(
                    "An outfeed_queue must be provided when outfeed_loss is True"
                )
            values: Any = self.loss
        elif mask is not None:
            if len(mask) != len(flat_outputs):
                raise ConfigurationError(
                    f"The last computational stage has {len(flat_outputs)} outputs, but the "
                    f"`outfeed_mask` has elements {len(mask)} - these need to match in size."
                )
            values = [o for o, hide in zip(flat_outputs, mask) if not hide]
        else:
            values = outputs
        leaves = [v for v in flatten(values) if v is not None]
        if leaves and self.outfeed is None:
            raise ConfigurationError(
                f"The last computational stage has tensor outputs: {leaves}, but no "
                "outfeed_queue has been provided. Pass outfeed_queue= (or return nothing from "
                "the last stage)."
            )
        if self.outfeed is not None and leaves:
            symbols = [to_symbol(v, graph) for v in leaves]
            self.outfeed_values = symbols
            self.outfeed_structure = pack_sequence_as(values, list(range(len(leaves))))
            if graph in self.outfeed._graphs:
                raise ConfigurationError(
                    "An outfeed can only be enqueued once per traced function."
                )
            self.outfeed._graphs.add(graph)
            self.outfeed._note_enqueue(self.outfeed_structure, [s.spec for s in symbols])
        fetched = self.outfeed_values + ([self.loss] if self.loss is not None else []) + self.grads
        self.compiled = CompiledGraph(self.ctx, fetched, self.placeholders)

    def _gradients(self, result: OptimizerFunctionOutput) -> None:
        if accumulation_of(result.opt) is not None:
            warnings.warn(
                "The pipeline's optimizer is a gradient-accumulation optimizer, but a pipeline "
                "already accumulates gradient_accumulation_count micro-batches: the gradients are "
                "accumulated twice. Pass the wrapped optimizer instead.",
                UserWarning,
                stacklevel=2,
            )
        self.optimizer = result.opt
        self.loss = result.loss
        if result.is_v2:
            if result.variables is not None:
                variables = list(result.variables)
            elif result.tape is not None:
                variables = [v for v in self.graph.variables if v.trainable]
            else:
                raise IncompatibleStateError(
                    "No variables to optimize. When using OptimizerV2, OptimizerFunctionOutput "
                    "must contain a list of variables or a GradientTape."
                )
        else:
            variables = result.variables or [v for v in self.graph.variables if v.trainable]
        grads = compute_gradients_symbolic(self.loss, variables)
        kept = present_gradients(list(zip(grads, variables)))
        self.grads = [g for g, _ in kept]
        self.variables = [v for _, v in kept]
        # The update phase as graph ops: lowering times them, and _run executes them on every
        # replica's fetched gradients (run_update) with the wrapper chain applying.
        with self.graph.phase("update"):
            self.update = add_update(self.grads, self.variables, innermost(self.optimizer))

    # ------------------------------------------------------------------ numerics
    def execute(self, exec_ctx: Any, arrays: list[Any]) -> None:
        """One call: ``repeat_count`` pipeline runs of ``gradient_accumulation_count``
        micro-batches each."""
        replicas = context.current_replicas()
        if replicas > 1 and self.optimizer is not None and not has_cross_replica(self.optimizer):
            raise IncompatibleStateError(
                f"The pipeline runs {replicas} replicas but its optimizer "
                f"({type(self.optimizer).__name__}) does not combine their gradients; wrap it in "
                "ipu.optimizers.CrossReplicaOptimizer."
            )
        for _ in range(self.args.repeat_count):
            self._run(list(arrays), replicas)
            self.runs += 1

    def _run(self, arrays: list[Any], replicas: int) -> None:
        n_out = len(self.outfeed_values)
        n_loss = 1 if self.loss is not None else 0
        dtype = self.options.get("gradient_accumulation_dtype")
        accumulator = GradientAccumulator(self.args.gac, self.args.reduction_method, dtype)
        outfeed_sum: list[np.ndarray] | None = None
        compiled = self.compiled
        assert compiled is not None  # attach() compiled the stages when the pipeline was traced
        for _ in range(self.args.gac):
            runs = [compiled.run_flat(arrays) for _ in range(replicas)]
            if n_out:
                outs = [
                    np.stack([r[i] for r in runs]) if replicas > 1 else np.array(runs[0][i])
                    for i in range(n_out)
                ]
                if self.options.get("accumulate_outfeed"):
                    outfeed_sum = (
                        outs if outfeed_sum is None else [a + b for a, b in zip(outfeed_sum, outs)]
                    )
                else:
                    self.outfeed._push(self.outfeed_structure, outs)
            if self.optimizer is not None:
                grads = [r[n_out + n_loss :] for r in runs]
                run_update(
                    self.update,
                    grads,
                    optimizer=ConcreteApply(self.optimizer),
                    accumulator=accumulator,
                )
        if outfeed_sum is not None:
            self.outfeed._push(self.outfeed_structure, outfeed_sum)

    # ------------------------------------------------------------------ timing
    def timing(self, config: Any, system: Any, replicas: int) -> Any:
        """Lower the pipeline for ``system`` (see :mod:`.pipeline_timing`)."""
        from ipusim.compat.runtime.pipeline_timing import lower_pipeline_run

        return lower_pipeline_run(self, config, system, replicas)

    def step_bytes(self) -> tuple[int, int, int]:
        """Samples per micro-batch, infeed bytes and outfeed bytes per micro-batch."""
        placeholders = [p for d in self.ctx.dequeues for p in d.placeholders]
        first = placeholders[0].spec if placeholders else None
        # dequeued elements have known sizes (the feeds check it)
        batch = (
            int(first.shape[0])  # type: ignore[arg-type]
            if first is not None and first.rank >= 1
            else 1
        )
        infeed = sum(p.spec.nbytes for p in placeholders)
        outfeed = sum(s.spec.nbytes for s in self.outfeed_values)
        if self.options.get("accumulate_outfeed"):
            outfeed = -(-outfeed // self.args.gac)  # one element per run, spread over its steps
        return batch, infeed, outfeed
