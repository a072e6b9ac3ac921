"""``ipusim.plan`` given a user's Keras model: the planner's best against every configuration of
the space simulated one by one, the same search from a function and from ``module:function``, and
the files of ``ipusim plan --model`` re-run by ``ipusim validate``."""

from __future__ import annotations

import itertools
import math
import tomllib

import pytest

import ipusim
from ipusim.cli import main
from ipusim.errors import ConfigurationError
from ipusim.plan.search import simulate
from ipusim.plan.space_model import layer_names
from tests.plan import _models

MODEL = "tests.plan._models:mlp"
#: An IPU-M2000: 4 IPUs. A global batch of 16 samples per weight update.
SYSTEM, BATCH = "M2000", 16
#: The exhaustive search's model and global batch: a small batch of a wide model, whose
#: gradients' all-reduce makes pipelines (and their options) competitive.
WIDE, WIDE_BATCH = "tests.plan._models:wide", 8
#: availableMemoryProportion settings of the pipelines: the default (0.6), ResNet-50's low
#: profiled value and the interpolated one.
PROPORTIONS = ({}, {"memory-proportion": 0.15}, {"memory-proportion": 0.3})


def _depth_ok(schedule: str, stages: int, ipus: int, acc: int) -> bool:
    """IPU TensorFlow's depth rule: Grouped 2 x stages, Interleaved the IPUs (which must be
    one per stage), Sequential any."""
    if schedule == "interleaved" and stages > ipus:
        return False
    need = {"grouped": 2 * stages, "interleaved": ipus, "sequential": 1}[schedule]
    return acc >= need and acc % need == 0


def _states(replicas: int) -> list[dict]:
    """Every optimizer-state setting: offloaded or on chip, sharded over 2+ replicas or not."""
    shards = (False, True) if replicas > 1 else (False,)
    return [
        {"offload": off, **({"sharded-optimizer-state": True} if sh else {})}
        for off in ("on", "off")
        for sh in shards
    ]


def _exhaustive(model: str = WIDE, batch: int = WIDE_BATCH) -> list[dict]:
    """Every configuration of the space: IPUs per replica 1, 2 or 4; every micro-batch that
    divides the replica's share; data parallel with every optimizer-state setting (with
    accumulation) and I/O tiles or not; pipelined: stage i on IPU i, or one more stage mapped
    back to IPU 0; every cut of the layers; every schedule its depth rule allows;
    recomputation on and off; every optimizer-state setting; I/O tiles or not with the
    Grouped schedule (with the others the simulator does not overlap the infeed: checked in
    the test); every proportion of :data:`PROPORTIONS`."""
    names = layer_names(model)
    out = []
    for ipr in (1, 2, 4):
        replicas = 4 // ipr
        share = batch // replicas
        for mb in [m for m in range(1, share + 1) if share % m == 0]:
            acc = share // mb
            base = {"system": SYSTEM, "model": model, "precision": "fp16.16", "stages": ipr}
            base |= {"replicas": replicas, "micro-batch": mb, "accumulation": acc}
            base["steps"] = acc * max(1, 16 // acc)
            io = [{}, {"io-tiles": 32}]
            if ipr == 1:
                states = _states(replicas) if acc > 1 else [{"offload": "off"}]
                out += [base | st | t for st in states for t in io]
                continue
            for mapping in (list(range(ipr)), [*range(ipr), 0]):
                stages = len(mapping)
                extra = {"device-mapping": mapping} if stages > ipr else {}
                for cut in itertools.combinations(range(1, len(names)), stages - 1):
                    split = {"stages": stages, "split": [names[c - 1] for c in cut], **extra}
                    for schedule in ("grouped", "interleaved", "sequential"):
                        if not _depth_ok(schedule, stages, ipr, acc):
                            continue
                        ios = io if schedule == "grouped" else io[:1]
                        for rc, st, t, amp in itertools.product(
                            ({}, {"recompute": True}), _states(replicas), ios, PROPORTIONS
                        ):
                            out.append(base | split | {"schedule": schedule} | rc | st | t | amp)
    return out


def test_the_planners_best_is_the_best_of_the_whole_space():
    result = ipusim.plan(WIDE, SYSTEM, WIDE_BATCH, budget_s=math.inf, progress=False)
    assert result.table["fits"].iloc[0]
    best = result.table["throughput"].iloc[0]
    space = _exhaustive()
    simulated = [simulate("keras_model", args) for args in space]
    top = max(o.predicted for o in simulated if o.memory_fits)
    assert best == pytest.approx(top, rel=1e-9)
    # the space has every option: schedules, a stage sharing IPU 0, offloading, sharding
    for key, value in (("schedule", "interleaved"), ("schedule", "sequential")):
        assert any(a.get(key) == value for a in space)
    assert any(a.get("device-mapping") == [0, 1, 0] for a in space)
    assert any(a.get("sharded-optimizer-state") and a["stages"] > 1 for a in space)
    # With the Sequential and Interleaved schedules I/O tiles do not overlap the infeed: they
    # only take their tiles from compute
    for schedule in ("sequential", "interleaved"):
        args = next(a for a in space if a.get("schedule") == schedule)
        with_io = simulate("keras_model", {**args, "io-tiles": 32}).predicted
        assert with_io < simulate("keras_model", args).predicted
    # every plan returned as fitting fits when run on its own
    for args in result.table[result.table["fits"]]["args"].head(3):
        assert simulate("keras_model", args).memory_fits
    # This model's pipelines run alike at every proportion, so the planner keeps the default's
    # (its other proportions' plans would be duplicates to simulate)
    alike: dict[str, set] = {}
    for args, out in zip(space, simulated):
        plan = {k: v for k, v in args.items() if k != "memory-proportion"}
        if args["stages"] > 1:
            alike.setdefault(repr(plan), set()).add((out.predicted, out.memory_used))
    assert all(len(runs) == 1 for runs in alike.values())
    pipelined = result.table[result.table["stages"] > 1]
    assert set(pipelined["memory_proportion"]) == {0.6}


def test_a_model_its_function_and_its_module_path_plan_alike():
    with ipusim.IPUStrategy().scope():
        model = _models.mlp()
    tables = [
        ipusim.plan(target, SYSTEM, BATCH, candidates=3, progress=False).table
        for target in (model, _models.mlp, MODEL)
    ]
    for table in tables[1:]:
        assert list(table["throughput"]) == list(tables[0]["throughput"])
        assert list(table["summary"]) == list(tables[0]["summary"])


def test_an_uncompiled_model_is_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match="compile it in the function"):
        ipusim.plan("tests.plan._models:uncompiled", SYSTEM, BATCH, candidates=1, progress=False)


def test_plan_model_command_writes_a_row_validate_reruns(tmp_path, capsys):
    folder = tmp_path / "plan"
    argv = ["plan", "--model", MODEL, "--system", SYSTEM, "--global-batch", str(BATCH)]
    assert main([*argv, "--candidates", "2", "-o", str(folder)]) == 0
    best = tomllib.loads((folder / "best.toml").read_text())
    assert best["workload"] == "keras_model" and best["args"]["model"] == MODEL
    capsys.readouterr()
    assert main(["validate", "--folder", str(folder), "--no-crossval"]) == 0
    assert "PLAN" in capsys.readouterr().out


def test_best_py_of_a_pipelined_plan_names_its_stages_and_ipus():
    from ipusim.plan.output import best_py

    args = {"stages": 2, "replicas": 2, "micro-batch": 4, "accumulation": 8, "split": ["dense_1"]}
    code = best_py({**args, "recompute": True, "recomputation-mode": "interleaved"})
    compile(code, "best.py", "exec")  # valid Python
    assert "config.auto_select_ipus = 4  # 2 replicas x 2 IPUs" in code
    assert "split_after = ['dense_1']" in code
    assert "RecomputationMode.RecomputeAndBackpropagateInterleaved" in code
    assert "gradient_accumulation_steps_per_replica=8" in code


def test_several_global_batches_are_searched_and_ranked_together():
    from ipusim.plan.cli import global_batches

    assert global_batches("8:40") == [8, 16, 32]
    assert global_batches("8,24") == [8, 24]
    for bad in ("0", "x", "16:8", "4:"):
        with pytest.raises(ConfigurationError, match="--global-batch"):
            global_batches(bad)
    table = ipusim.plan(MODEL, SYSTEM, [8, 16], budget_s=math.inf, progress=False).table
    assert set(table["global_batch"]) == {8, 16}
    alone = {
        gb: ipusim.plan(MODEL, SYSTEM, gb, budget_s=math.inf, progress=False).table
        for gb in (8, 16)
    }
    for gb, one in alone.items():  # each batch's best is found as when searched alone
        assert table[table["global_batch"] == gb]["throughput"].max() == pytest.approx(
            one["throughput"].max(), rel=1e-12
        )


def test_auto_named_layers_plan_without_errors():
    """Each build of a model function names its layers anew (dense_4, dense_5 ...); the
    planner's builds start from fresh counters, so pipelined candidates find their splits."""
    _models.auto_named()  # the counters move on, as in a user's session
    table = ipusim.plan(_models.auto_named, SYSTEM, BATCH, candidates=12, progress=False).table
    assert (table["stages"] > 1).any()
    assert (table["error"] == "").all(), list(table["error"])


def test_a_global_batch_no_configuration_takes_is_refused_with_the_fix():
    # 16 IPUs, at most 4 per replica (the model's 4 layers): 3 samples do not split over them
    with pytest.raises(ConfigurationError, match="multiple of the system's IPU count"):
        ipusim.plan(MODEL, "POD16", 3, candidates=1, progress=False)
    # a 4-IPU Sequential pipeline takes any accumulation: 3 samples on an IPU-M2000 plan
    table = ipusim.plan(MODEL, SYSTEM, 3, candidates=1, progress=False).table
    assert table["fits"].iloc[0] and table["stages"].iloc[0] == 4
