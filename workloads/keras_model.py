"""Any Keras model as a workload: ``--model module:function`` names a function of no arguments
that returns the model (built in the strategy's scope, compiled with its optimizer and loss), and
the data are zeros of its input shapes. ``ipusim plan`` plans a user's model through it (a
function given in Python is registered under a name with :func:`register`; the model an IPU
TensorFlow 2 script fits is named ``script:PATH ARG...``, see :mod:`ipusim.plan.script`).

Run: ``python workloads/keras_model.py --model mypackage.models:build --stages 2 --split dense_1``
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

import ipusim
from ipusim import keras
from ipusim.errors import ConfigurationError
from workloads import common

#: Builders registered in this process (``register``), by name.
_BUILDERS: dict[str, Callable[[], Any]] = {}


def register(name: str, build: Callable[[], Any]) -> str:
    """Make ``build`` the model of ``--model name`` in this process; returns ``name``."""
    _BUILDERS[name] = build
    return name


def builder(
    reference: str, system: str | None = None, needs_loss: bool = True
) -> Callable[[], Any]:
    """The model function ``--model`` names: a registered name, a script reference
    (``script:PATH ARG...``, :mod:`ipusim.plan.script`: the script runs now, up to that call, on
    ``system`` as ``ipusim run --system`` runs it, and its model is registered under the
    reference) or ``module:function``. The function it returns checks that the model is
    compiled with a loss, unless not ``needs_loss`` (a model that only predicts).

    Raises:
        ConfigurationError: a reference of none of these forms.
    """
    from ipusim.plan.script import parse_reference, script_model

    script = parse_reference(reference)
    if reference not in _BUILDERS and script is not None:
        model = script_model(script.path, script.args, system, script.number, script.call)
        register(reference, lambda: model)
    if reference in _BUILDERS:
        return functools.partial(_compiled, _BUILDERS[reference], reference, needs_loss)
    module, _, function = reference.partition(":")
    if not function:
        raise ConfigurationError(
            f"--model must be module:function (a function returning a compiled Keras model), "
            f"script:PATH (the model a script fits) or a name registered in this process; got "
            f"{reference!r}"
        )
    build = getattr(importlib.import_module(module), function)
    return functools.partial(_compiled, build, reference, needs_loss)


def _compiled(build: Callable[[], Any], reference: str, needs_loss: bool) -> Any:
    """``build()``, refused with the fix unless compiled with a loss when it ``needs_loss``
    (the workload trains it with that loss; ipusim cannot choose one for the user)."""
    model = build()
    if needs_loss and getattr(model, "loss", None) is None:
        raise ConfigurationError(
            f"the model of {reference!r} is not compiled with a loss; compile it in the function "
            "before returning it: model.compile(optimizer=..., loss=...) (the planner trains it "
            "with that loss and optimizer)"
        )
    return model


def sample(spec: Any, batch: int, dtype: Any = np.float32) -> np.ndarray:
    """Zeros of a Keras tensor's shape with ``batch`` as its leading dimension."""
    return np.zeros((batch, *tuple(spec.shape)[1:]), dtype)


def targets(model: Any, batch: int) -> Any:
    """Zero targets for the model's outputs: class indices for a sparse loss, else zeros of the
    output's shape."""
    loss = model.loss
    name = loss if isinstance(loss, str) else type(loss).__name__ + getattr(loss, "__name__", "")
    sparse = "sparse" in name.lower()
    outs = [sample(o, batch) for o in model.outputs]
    if sparse:
        outs = [np.zeros(o.shape[:-1], np.int32) for o in outs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def main(argv: list[str] | None = None) -> Any:
    p = common.parser(
        "A Keras model's training throughput on simulated IPUs",
        micro_batch=8,
        accumulation=1,
        stages=1,
        steps=8,
    )
    p.add_argument(
        "--model",
        required=True,
        help="module:function returning a compiled model, or script:PATH ARG... (the model "
        "the script fits first; script@N:... its Nth fit, script@predict:... its first predict)",
    )
    p.add_argument("--split", nargs="*", default=[], help="layers after which a stage starts")
    args = common.parse(p, argv)
    if args.stages > 1 and len(args.split) != args.stages - 1:
        p.error(f"--stages {args.stages} needs {args.stages - 1} --split layer names")
    # A script reference runs the script here, before this run configures the IPUs.
    build = builder(args.model, args.system or None, needs_loss=args.inference != "predict")
    common.configure(args)
    with ipusim.IPUStrategy().scope():
        model = build()
        if args.stages > 1:
            common.assign_stages_by_split(model, args.split)
        else:  # a model a script pipelined itself runs as the plan says
            model.reset_pipeline_stage_assignment()
            # A model object run again keeps its last run's accumulation options: start afresh
            # (pipeline() sets them again when this run accumulates).
            model.set_gradient_accumulation_options()
        common.pipeline(model, args)
        model.compile(
            optimizer=common.optimizer(args) or model.optimizer or keras.optimizers.SGD(),
            loss=model.loss,
            steps_per_execution=common.steps_per_execution(args),
        )
        inputs = [sample(i, args.micro_batch) for i in model.inputs]
        common.run(
            model,
            args,
            common.synthetic(
                inputs[0] if len(inputs) == 1 else tuple(inputs), targets(model, args.micro_batch)
            ),
        )
    return common.report(model, args)


if __name__ == "__main__":
    main()
