"""What every workload script shares: its command line, the IPU configuration, synthetic data.

Arguments: ``--system`` (preset or TOML), ``--ipus`` (IPUs to select; default replicas x
stages), ``--micro-batch``, ``--accumulation``, ``--replicas``, ``--stages``, ``--schedule``,
``--precision``, ``--steps`` (micro-batch steps per replica), ``--steps-per-execution``,
``--epochs``, ``--timing-only``, ``--recompute``, ``--output`` (folder for the report),
``--inference [predict|evaluate]`` (``predict``, or ``evaluate``, instead of ``fit``: :func:`run`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

import ipusim
from ipusim import keras
from ipusim.choices import ENGINES
from ipusim.data import Dataset
from ipusim.errors import ConfigurationError
from ipusim.pipelining import PipelineSchedule, RecomputationMode

#: Optimizers by name. LAMB and LARS (Graphcore's BERT and ResNet-50 runs) are not in ipusim's
#: Keras: their updates are the Adam and momentum updates plus two norms per variable, once per
#: weight update, so "adam" and "momentum" stand in for them.
OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.01),
    "momentum": lambda: keras.optimizers.SGD(0.01, momentum=0.9),
    "adam": lambda: keras.optimizers.Adam(1e-3),
    "rmsprop": lambda: keras.optimizers.RMSprop(1e-3),
}

#: IPU TensorFlow's switch for on-device synthetic data (no host I/O).
SYNTHETIC_FLAG = "--use_synthetic_data"

SCHEDULES = {
    "grouped": PipelineSchedule.Grouped,
    "interleaved": PipelineSchedule.Interleaved,
    "sequential": PipelineSchedule.Sequential,
}

#: ``--recomputation-mode`` choices.
RECOMPUTATION_MODES = {
    "auto": RecomputationMode.Auto,
    "then": RecomputationMode.RecomputeThenBackpropagate,
    "interleaved": RecomputationMode.RecomputeAndBackpropagateInterleaved,
}


def parser(
    description: str,
    *,
    micro_batch: int,
    accumulation: int,
    stages: int,
    steps: int,
    precision: str = "fp32",
    system: str = "",
) -> argparse.ArgumentParser:
    """The common command line with the workload's defaults."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--system", default=system, help="system preset or TOML (default: sized by the IPU count)"
    )
    p.add_argument(
        "--ipus", type=int, default=None, help="IPUs to select (default: replicas x pipeline IPUs)"
    )
    p.add_argument("--replicas", type=int, default=1, help="data-parallel replicas")
    p.add_argument("--stages", type=int, default=stages, help="pipeline stages (1 = none)")
    p.add_argument("--schedule", choices=sorted(SCHEDULES), default="grouped")
    p.add_argument(
        "--assignment",
        type=int,
        nargs="+",
        default=None,
        help="pipeline stage of each layer of a Sequential model, e.g. 0 0 0 1 1 1 1",
    )
    p.add_argument(
        "--device-mapping",
        type=int,
        nargs="+",
        default=None,
        help="IPU of each pipeline stage (default: stage i on IPU i); e.g. 0 0 0 0 runs four "
        "stages on one IPU, as recomputation checkpoints",
    )
    p.add_argument("--micro-batch", type=int, default=micro_batch)
    p.add_argument(
        "--accumulation",
        type=int,
        default=accumulation,
        help="gradient accumulation steps per replica",
    )
    p.add_argument("--precision", choices=["fp32", "fp16.16", "fp16.32"], default=precision)
    p.add_argument(
        "--steps", type=int, default=steps, help="micro-batch steps per replica and epoch"
    )
    p.add_argument(
        "--steps-per-execution",
        type=int,
        default=None,
        help="steps per host round trip; must divide --steps (default: all steps in one execution)",
    )
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--recompute", action="store_true", help="recompute activations")
    p.add_argument(
        "--recomputation-mode",
        choices=sorted(RECOMPUTATION_MODES),
        default="auto",
        help="pipelining_ops.RecomputationMode with --recompute: auto (IPU TensorFlow's choice "
        "for the schedule), then (RecomputeThenBackpropagate) or interleaved "
        "(RecomputeAndBackpropagateInterleaved, which keeps recomputation checkpoints)",
    )
    p.add_argument(
        "--timing-only",
        action="store_true",
        help="simulate only (no numerics; weights are never allocated)",
    )
    p.add_argument("--output", default=None, help="save the simulation report in this folder")
    p.add_argument(
        "--optimizer",
        choices=sorted(OPTIMIZERS),
        default=None,
        help="optimizer (default: the workload's own)",
    )
    _add_feed_and_state_arguments(p)
    _add_host_and_device_arguments(p)
    return p


def _add_feed_and_state_arguments(p: argparse.ArgumentParser) -> None:
    """Inference, offloading, metrics, host processes and the infeed."""
    p.add_argument(
        "--inference",
        nargs="?",
        const="predict",
        default=None,
        choices=["predict", "evaluate"],
        help="run model.predict (the default) or model.evaluate on the synthetic data instead "
        "of fit (forward pass only; --accumulation and the optimizer options do not apply)",
    )
    p.add_argument(
        "--offload",
        choices=["default", "on", "off"],
        default="default",
        help="optimizer state in Streaming Memory: IPU TensorFlow's default, or forced on/off",
    )
    p.add_argument(
        "--sharded-optimizer-state",
        action="store_true",
        help="replicated_optimizer_state_sharding (replicated tensor sharding)",
    )
    p.add_argument(
        "--metrics",
        nargs="*",
        default=None,
        help="Keras metrics to compile, e.g. accuracy (default: the workload's; 'none' or no "
        "name: only the loss is outfed)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=0,
        help="host processes sharing the replicas (multi_replica_distribution.process_count; "
        "each drives IPUs / processes IPUs; 0: one process feeds them all)",
    )
    p.add_argument(
        "--prefetch-depth",
        type=int,
        default=None,
        help="infeed buffers near the IPU (IPU TensorFlow's default 3; 1 copies from the host "
        "each step, as PopTorch and PopXL do by default)",
    )
    p.add_argument(
        "--synthetic-data",
        action="store_true",
        help="no host I/O: data is made on the device (TF_POPLAR_FLAGS=--use_synthetic_data)",
    )
    p.add_argument(
        "--host-overhead",
        type=float,
        default=None,
        help="host time per execution in seconds (default: the system preset's)",
    )


def _add_host_and_device_arguments(p: argparse.ArgumentParser) -> None:
    """The host preset, input loaders, memory and device options."""
    p.add_argument(
        "--host",
        default="",
        help="host preset (cfg.ipusim.host; default: the one shipped with the system)",
    )
    p.add_argument(
        "--loader-workers",
        type=int,
        default=0,
        help="input is ImageNet JPEGs decoded by a PyTorch DataLoader with this many worker "
        "processes per host process (ipusim.data.host_cost.loader_seconds_per_sample); 0: the "
        "workload's own input pipeline",
    )
    p.add_argument(
        "--torch-mnist-loop",
        action="store_true",
        help="each step is fed by an in-thread PyTorch MNIST DataLoader under a tqdm bar, "
        "serial with the host round trip (ipusim.data.host_cost.torch_mnist_loop_seconds_per_step)",
    )
    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="training samples of NumPy input in timing-only runs (default: the dataset's)",
    )
    p.add_argument(
        "--memory-proportion",
        type=float,
        default=None,
        help="availableMemoryProportion of convolutions and matmuls (PopLibs default 0.6)",
    )
    p.add_argument(
        "--partials",
        choices=["half", "float"],
        default=None,
        help="partialsType of convolutions and matmuls (default: as the precision says)",
    )
    p.add_argument(
        "--batch-norm-group",
        type=int,
        default=1,
        help="replicas whose batch norms share statistics "
        "(norms.experimental.distributed_batch_norm_replica_group_size; MLPerf's BN_span)",
    )
    p.add_argument(
        "--stable-norm",
        action="store_true",
        help="batch norms compute the variance from mean-free activations "
        "(norms.use_stable_statistics)",
    )
    p.add_argument(
        "--io-tiles",
        type=int,
        default=0,
        help="I/O tiles per IPU (io_tiles.num_io_tiles, with place_ops_on_io_tiles: infeed "
        "copies then overlap compute)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="which engine times the run (cfg.ipusim.engine; both give the same timeline)",
    )


def parse(p: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv`` and check the step counts before anything runs.

    When ``argv`` is given (a study or a test calls the workload), a bad argument raises instead
    of printing argparse's usage line and exiting, so a sweep reports it as that
    configuration's one-line error.

    Raises:
        ConfigurationError: for an argument argparse refuses (``argv`` given), if ``--steps``,
            ``--steps-per-execution`` or ``--epochs`` is not positive, or the steps per
            execution do not divide the steps of an epoch.
    """
    if argv is not None:
        p.error = _raise_configuration_error  # type: ignore[method-assign]
    args = p.parse_args(argv)
    for flag in (
        "accumulation",
        "steps",
        "steps_per_execution",
        "epochs",
        "micro_batch",
        "replicas",
    ):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise ConfigurationError(
                f"--{flag.replace('_', '-')} must be a positive integer; got {value}"
            )
    spe = steps_per_execution(args)
    if args.steps % spe:
        raise ConfigurationError(
            f"--steps-per-execution {spe} must divide --steps {args.steps} (the steps of an "
            f"epoch run in whole executions); give --steps {spe} or a divisor of {args.steps}"
        )
    return args


def _raise_configuration_error(message: str) -> NoReturn:
    raise ConfigurationError(f"workload argument: {message}")


def metrics(args: argparse.Namespace, default: Sequence[str] = ()) -> list[str]:
    """The Keras metrics to compile: ``--metrics`` (``none`` or no name: none), else ``default``."""
    if args.metrics is None:
        return list(default)
    return [m for m in args.metrics if m.lower() != "none"]


def configure(args: argparse.Namespace) -> None:
    """Configure the simulated IPU system from the arguments."""
    ipusim.config.reset_ipu_configuration()
    flags = [f for f in os.environ.get("TF_POPLAR_FLAGS", "").split() if f != SYNTHETIC_FLAG]
    if args.synthetic_data:
        flags.append(SYNTHETIC_FLAG)
    if flags:
        os.environ["TF_POPLAR_FLAGS"] = " ".join(flags)
    else:  # leave no empty variable behind in the caller's environment
        os.environ.pop("TF_POPLAR_FLAGS", None)
    cfg = ipusim.IPUConfig()
    ipus = args.ipus or args.replicas * ipus_per_replica(args)
    if args.processes:
        # IPU TensorFlow's rule: auto_select_ipus counts one process's IPUs and the global
        # replication factor is the local one times process_count.
        if ipus % args.processes:
            raise SystemExit(
                f"--processes {args.processes} must divide the {ipus} IPUs of the run "
                "(each process drives the same number of IPUs)"
            )
        ipus //= args.processes
    cfg.auto_select_ipus = ipus
    cfg.allow_recompute = bool(args.recompute)
    cfg.ipusim.system = args.system
    cfg.ipusim.precision = args.precision
    cfg.ipusim.numerics = not args.timing_only
    cfg.ipusim.engine = args.engine
    if args.io_tiles:
        cfg.io_tiles.num_io_tiles = args.io_tiles
        cfg.io_tiles.place_ops_on_io_tiles = True
    if args.host_overhead is not None:
        cfg.ipusim.host_overhead_s = args.host_overhead
    cfg.ipusim.host = args.host
    if args.torch_mnist_loop:
        cfg.ipusim.host_overhead_s = _with_torch_loop(args, ipus * max(args.processes, 1))
    if args.loader_workers:
        cfg.ipusim.host_dataset_rate = _loader_rate(args, ipus * max(args.processes, 1))
    options: dict[str, Any] = {}
    if args.memory_proportion is not None:
        options["availableMemoryProportion"] = str(args.memory_proportion)
    if args.partials is not None:
        options["partialsType"] = args.partials
    if args.processes:
        cfg.experimental.multi_replica_distribution.process_count = args.processes
        cfg.experimental.multi_replica_distribution.process_index = 0
    cfg.norms.experimental.distributed_batch_norm_replica_group_size = args.batch_norm_group
    cfg.norms.use_stable_statistics = bool(args.stable_norm)
    cfg.convolutions.poplar_options = dict(options)
    cfg.matmuls.poplar_options = dict(options)
    cfg.configure_ipu_system()


def _host_system(args: argparse.Namespace, ipus: int) -> Any:
    """The run's system with its host preset (as configure_ipu_system will resolve it)."""
    from ipusim.config.ipusim_options import SYSTEM_PRESETS_BY_SIZE
    from ipusim.hardware import load_system
    from ipusim.hardware.hosts import with_host

    name = args.system or next(n for size, n in SYSTEM_PRESETS_BY_SIZE if size >= ipus)
    return with_host(load_system(name), args.host)


def _loader_rate(args: argparse.Namespace, ipus: int) -> float:
    """Samples/s one host process's JPEG-decoding loader delivers on the run's host preset."""
    from ipusim.data.host_cost import loader_seconds_per_sample
    from ipusim.session.options import host_cpu_per_process

    cpu = host_cpu_per_process(_host_system(args, ipus), max(args.processes, 1))
    return 1.0 / loader_seconds_per_sample(args.loader_workers, cpu)


def _with_torch_loop(args: argparse.Namespace, ipus: int) -> float:
    """Host seconds per execution: the framework's round trip plus an in-thread PyTorch MNIST
    loader feeding each of its steps (serial with it, on the host preset's CPU)."""
    from ipusim.data.host_cost import torch_mnist_loop_seconds_per_step
    from ipusim.session.options import host_cpu_per_process

    system = _host_system(args, ipus)
    base = (
        system.host.per_execution_overhead_s if args.host_overhead is None else args.host_overhead
    )
    cpu = host_cpu_per_process(system, max(args.processes, 1))
    steps = steps_per_execution(args)
    return base + steps * torch_mnist_loop_seconds_per_step(args.micro_batch, cpu)


def ipus_per_replica(args: argparse.Namespace) -> int:
    """IPUs one replica needs: the shards of its pipeline (max(device_mapping) + 1, rounded up to
    a power of two as IPU TensorFlow does), or 1 when it is not pipelined."""
    if args.stages <= 1:
        return 1
    mapping = args.device_mapping or list(range(args.stages))
    if len(mapping) != args.stages:
        raise SystemExit(
            f"--device-mapping has {len(mapping)} entries but --stages is {args.stages}; give "
            "one IPU per stage"
        )
    from ipusim.lowering.shards import ipus_per_replica as rule

    return rule(mapping)


def pipeline(model: keras.Model, args: argparse.Namespace) -> None:
    """Apply the pipelining, accumulation and infeed options of the arguments to ``model``."""
    if args.prefetch_depth is not None:
        model.set_infeed_queue_options(prefetch_depth=args.prefetch_depth)
    if args.assignment:
        if max(args.assignment) + 1 != args.stages:
            raise SystemExit(
                f"--assignment {args.assignment} has {max(args.assignment) + 1} stages but "
                f"--stages is {args.stages}"
            )
        model.set_pipeline_stage_assignment(list(args.assignment))
    if args.stages > 1:
        kwargs: dict[str, Any] = {"pipeline_schedule": SCHEDULES[args.schedule], **_offload(args)}
        if args.device_mapping:
            kwargs["device_mapping"] = list(args.device_mapping)
        if args.recompute:
            # Auto: RecomputeThenBackpropagate (Grouped, Interleaved) or
            # RecomputeAndBackpropagateInterleaved (Sequential), as IPU TensorFlow resolves it.
            kwargs["recomputation_mode"] = RECOMPUTATION_MODES[args.recomputation_mode]
        model.set_pipelining_options(
            gradient_accumulation_steps_per_replica=args.accumulation, **kwargs
        )
    elif args.accumulation > 1:
        model.set_gradient_accumulation_options(
            gradient_accumulation_steps_per_replica=args.accumulation, **_offload(args)
        )


def _offload(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if args.offload != "default":
        kwargs["offload_weight_update_variables"] = args.offload == "on"
    if args.sharded_optimizer_state:
        kwargs["replicated_optimizer_state_sharding"] = True
    return kwargs


def optimizer(args: argparse.Namespace) -> Any:
    """The optimizer the arguments ask for, or None when they name none."""
    return OPTIMIZERS[args.optimizer]() if args.optimizer else None


def assign_stages_by_split(model: keras.Model, split_after: Sequence[str]) -> None:
    """Pipeline a functional model: stage s+1 starts after the layer call named split_after[s].

    This is the documented way of pipelining an existing functional model (post-order
    assignments, e.g. splitting ResNet-50 after ``conv4_block2_add``).
    """
    assignments = model.get_pipeline_stage_assignment()
    stage, splits = 0, list(split_after)
    for assignment in assignments:
        assignment.pipeline_stage = stage
        if splits and assignment.layer.name == splits[0]:
            stage += 1
            splits.pop(0)
    if splits:
        raise ValueError(f"split points {splits} are not layer names of the model")
    model.set_pipeline_stage_assignment(assignments)


def synthetic(inputs: Any, targets: Any) -> Dataset:
    """An endless dataset repeating one zero batch of the given arrays (data by shape)."""
    return Dataset.from_tensors((inputs, targets)).repeat()


def run(model: keras.Model, args: argparse.Namespace, data: Dataset) -> None:
    """Train on ``data`` (``fit``), or with ``--inference`` predict on it (``predict``; or
    ``evaluate`` with ``--inference evaluate``), for ``--steps`` micro-batches per replica
    (``--epochs`` epochs when training)."""
    steps = args.steps * args.replicas
    if args.inference == "evaluate":
        model.evaluate(data, steps=steps, verbose=0)
    elif args.inference:
        model.predict(data, steps=steps, verbose=0)
    else:
        model.fit(data, epochs=args.epochs, steps_per_epoch=steps, verbose=0)


def steps_per_execution(args: argparse.Namespace) -> int:
    return args.steps_per_execution or args.steps


def report(model: keras.Model, args: argparse.Namespace, print_fn: Any = print) -> Any:
    """Print (and save) the last simulation."""
    simulation = model.last_simulation
    print_fn(simulation.summary())
    if args.output:
        simulation.save(args.output)
        print_fn(f"report written to {args.output}")
    return simulation


def zeros(shape: tuple, dtype: Any = np.float32) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)
