"""``ipusim.plan(..., inference=True)``: forward-only plans (``model.predict``). The planner's best
against every inference configuration simulated one by one, the files of ``ipusim plan
--inference`` re-run to their throughput, and a model whose inference plan needs none of what
training needs (accumulation, more IPUs per replica) to fit."""

from __future__ import annotations

import csv
import itertools
import math
import tomllib

import pytest

import ipusim
from ipusim import keras
from ipusim.cli import main
from ipusim.errors import ConfigurationError
from ipusim.plan.profile import from_report, workload_report
from ipusim.plan.search import measure
from ipusim.plan.space_model import layer_names

MODEL = "tests.plan._models:mlp"
WIDE = "tests.plan.test_plan_inference:wide"
#: An IPU-M2000: 4 IPUs. 16 samples per device step over all replicas.
SYSTEM, BATCH = "M2000", 16


def wide() -> keras.Model:
    """About 100 million parameters: 0.2 GB of fp16 weights fit an IPU's 0.9 GB, but not with
    Adam's two moments per weight (E: what the memory check of the test then shows)."""
    inputs = keras.Input((2048,))
    x = keras.layers.Dense(8192, activation="relu", name="up")(inputs)
    x = keras.layers.Dense(8192, activation="relu", name="mid")(x)
    x = keras.layers.Dense(2048, activation="relu", name="down")(x)
    model = keras.Model(inputs, keras.layers.Dense(10, name="logits")(x))
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


#: The dataset of the exhaustive search: 8 device steps of the global batch.
SAMPLES = 8 * BATCH
#: The host's round trip per execution on the M2000 preset (system-m2000.toml: 2.8 ms).
HOST_S = 2.8e-3


def _executions(stages: int) -> list[tuple[str, int, int]]:
    """(schedule, I/O tiles, device iterations) a pipeline of ``stages`` stages, one per IPU,
    may run 8 device steps in, by IPU TensorFlow's rules as documented: Grouped and
    Interleaved (one stage per IPU) need iterations a multiple of the stages (the IPUs), and
    Sequential any; the infeed overlaps compute (I/O tiles) on one IPU or with Grouped only.
    The iterations divide the 8 steps."""
    out = []
    for schedule in ("grouped", "interleaved", "sequential") if stages > 1 else ("grouped",):
        multiple = 1 if schedule == "sequential" else stages
        for io in (0, 32) if schedule == "grouped" else (0,):
            out += [(schedule, io, n) for n in (1, 2, 4, 8) if n % multiple == 0]
    return out


def _exhaustive(call: bool | str = True) -> list[dict]:
    """Every inference configuration on the M2000: 1, 2 or 4 IPUs per replica using all four
    IPUs, micro-batch = 16 / replicas, every cut of the four layers into the stages, every
    schedule, I/O tile count and device iteration count."""
    names = layer_names(MODEL)
    out = []
    for ipr in (1, 2, 4):
        replicas = 4 // ipr
        base = {"system": SYSTEM, "model": MODEL, "precision": "fp16.16", "inference": call}
        base |= {"stages": ipr, "replicas": replicas, "micro-batch": BATCH // replicas}
        base |= {"accumulation": 1, "steps": SAMPLES // BATCH}
        for cut in itertools.combinations(range(1, len(names)), ipr - 1):
            split = {"split": [names[c - 1] for c in cut]} if cut else {}
            for schedule, io, spe in _executions(ipr):
                extra = {"schedule": schedule, "io-tiles": io, "steps-per-execution": spe}
                out.append({**base, **split, **extra})
    return out


def _latency(args: dict, throughput: float) -> float:
    """Seconds of one execution: its samples over the throughput (executions back to back)."""
    return args["steps-per-execution"] * BATCH / throughput


@pytest.fixture(scope="module")
def exhaustive() -> list[tuple[dict, dict]]:
    return [(args, measure("keras_model", args)) for args in _exhaustive()]


def test_the_inference_planners_best_is_the_best_of_the_whole_space(exhaustive):
    assert len(exhaustive) == 8 + 3 * 13 + 10 and all(f["fits"] for _, f in exhaustive)
    result = ipusim.plan(
        MODEL, SYSTEM, BATCH, inference=True, samples=SAMPLES, budget_s=math.inf, progress=False
    )
    table = result.table
    assert table["fits"].iloc[0] and table["inference"].all()
    assert result.estimated == len(exhaustive)  # the planner's space is the whole space
    best = max(f["throughput"] for _, f in exhaustive)
    assert table["throughput"].iloc[0] == pytest.approx(best, rel=1e-9)
    for args in table[table["fits"]]["args"]:  # every plan returned as fitting fits on its own
        assert args["accumulation"] == 1 and not args.get("recompute")
        assert args["micro-batch"] * args["replicas"] == BATCH
        assert measure("keras_model", args)["fits"]


def test_a_latency_bound_trades_throughput_for_results_sooner(exhaustive):
    # 3.05 ms per execution: the host's 2.8 ms round trip leaves room for 4 device iterations
    # of this model, not 8 (about 30 us each on a Grouped pipeline)
    bound = 3.05e-3
    within = [(a, f) for a, f in exhaustive if _latency(a, f["throughput"]) <= bound]
    assert {a["steps-per-execution"] for a, _ in within} == {1, 2, 4}
    result = ipusim.plan(
        MODEL,
        SYSTEM,
        BATCH,
        inference=True,
        samples=SAMPLES,
        max_latency_s=bound,
        budget_s=math.inf,
        progress=False,
    )
    top = result.table.iloc[0]
    assert top["throughput"] == pytest.approx(max(f["throughput"] for _, f in within), rel=1e-9)
    assert top["latency_s"] <= bound and top["steps_per_execution"] <= 4
    assert (result.table["latency_s"] <= bound).all()
    unbounded = max(f["throughput"] for _, f in exhaustive)
    assert top["throughput"] < unbounded  # what the bound costs


def test_more_device_iterations_amortise_the_hosts_round_trip(exhaustive):
    # One IPU per replica, no I/O tiles: an execution of n iterations lasts h + n t, so the
    # round trip h is what the latencies at 2 and 4 iterations say it is: the preset's 2.8 ms.
    one = {
        a["steps-per-execution"]: _latency(a, f["throughput"])
        for a, f in exhaustive
        if a["stages"] == 1 and not a["io-tiles"]
    }
    per_iteration = (one[4] - one[2]) / 2
    assert one[2] - 2 * per_iteration == pytest.approx(HOST_S, rel=0.02)
    assert one[8] == pytest.approx(HOST_S + 8 * per_iteration, rel=0.01)


def test_an_inference_profile_has_no_backward_pass_or_optimizer_state():
    args = {"system": SYSTEM, "model": MODEL, "inference": True, "micro-batch": 4}
    args |= {"replicas": 1, "stages": 2, "split": ["dense_1"], "steps": 4}
    p = from_report(workload_report("keras_model", args), lambda name: name)
    assert set(p.groups) == set(layer_names(MODEL))
    for cost in p.groups.values():
        assert cost.forward_s > 0 and cost.weight_bytes > 0
        assert cost.backward_s == 0 and cost.state_bytes == 0
    assert p.update_s == 0
    # a Dense layer's weights: (inputs + 1) x units values, fp32 (the workload's default)
    assert p.groups["dense_0"].weight_bytes == (32 + 1) * 64 * 4


def test_plan_inference_command_writes_a_row_that_reruns_to_its_throughput(tmp_path, capsys):
    folder = tmp_path / "plan"
    argv = ["plan", "--model", MODEL, "--system", SYSTEM, "--global-batch", str(BATCH)]
    assert main([*argv, "--inference", "--candidates", "3", "-o", str(folder)]) == 0
    best = tomllib.loads((folder / "best.toml").read_text())
    assert best["args"]["inference"] is True and best["args"]["accumulation"] == 1
    rerun = measure(best["workload"], best["args"])
    assert rerun["fits"]
    assert rerun["throughput"] == pytest.approx(best["measured"], rel=1e-9)
    code = (folder / "best.py").read_text()
    compile(code, "best.py", "exec")
    assert "model.predict(" in code and "optimizer" not in code
    capsys.readouterr()
    assert main(["validate", "--folder", str(folder), "--no-crossval"]) == 0
    assert "PLAN" in capsys.readouterr().out


def test_plan_evaluate_command_bounds_the_latency_and_the_device_iterations(tmp_path):
    folder = tmp_path / "plan"
    argv = ["plan", "--model", MODEL, "--system", SYSTEM, "--global-batch", str(BATCH)]
    argv += ["--evaluate", "--samples", str(SAMPLES), "--max-latency-s", "0.00305"]
    assert main([*argv, "--candidates", "4", "-o", str(folder)]) == 0
    best = tomllib.loads((folder / "best.toml").read_text())["args"]
    assert best["inference"] == "evaluate" and best["steps"] == SAMPLES // BATCH
    assert best["steps-per-execution"] in (1, 2, 4)  # 8 take longer than 3.05 ms
    code = (folder / "best.py").read_text()
    assert f"steps_per_execution={best['steps-per-execution']})" in code
    assert "model.evaluate(dataset" in code
    with open(folder / "plans.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(float(r["latency_s"]) <= 0.00305 for r in rows)


def test_inference_fits_where_training_needs_accumulation_or_more_ipus():
    training = ipusim.plan(WIDE, SYSTEM, BATCH, budget_s=math.inf, progress=False).table
    inference = ipusim.plan(WIDE, SYSTEM, BATCH, inference=True, budget_s=math.inf, progress=False)
    trained, served = training.iloc[0], inference.table.iloc[0]
    assert trained["fits"] and served["fits"]
    assert served["accumulation"] == 1 and served["micro_batch"] >= trained["micro_batch"]
    # Training accumulates, or runs more stages (a Sequential pipeline takes any accumulation).
    assert trained["accumulation"] > 1 or trained["stages"] > served["stages"]
    # Training takes more IPUs per replica, or shards Adam's moments over the replicas.
    assert served["stages"] < trained["stages"] or trained["args"].get("sharded-optimizer-state")
    # Why: on one IPU per replica (4 samples each) training does not fit the memory check
    # (Adam's moments), while the forward pass alone does.
    one_ipu = {"system": SYSTEM, "model": WIDE, "precision": "fp16.16", "stages": 1}
    one_ipu |= {"replicas": 4, "micro-batch": 4, "accumulation": 1, "steps": 4}
    refused = measure("keras_model", one_ipu)
    assert not refused["fits"] and refused["error"].startswith("OutOfMemoryError")
    assert measure("keras_model", {**one_ipu, "inference": True})["fits"]


@pytest.mark.parametrize(
    ("workload", "args", "layers"),
    [
        ("bert", {"size": "base", "sequence": 32, "masked": 4, "vocab": 1000}, 12),
        ("resnet50", {"image-size": 32}, 16),
    ],
)
def test_bert_and_resnet_inference_plans_fit_and_cover_every_layer(workload, args, layers):
    table = ipusim.plan(
        workload, SYSTEM, BATCH, args, inference=True, candidates=2, progress=False
    ).table
    assert table["fits"].all() and table["inference"].all()
    for plan in table["args"]:
        assert plan["micro-batch"] * plan["replicas"] == BATCH and plan["accumulation"] == 1
        stages = plan["stages"]
        if workload == "bert" and stages > 1:
            assert len(plan["layers-per-ipu"]) == stages
            assert sum(plan["layers-per-ipu"]) == layers
        elif stages > 1:
            assert len(plan["split"]) == stages - 1


def test_run_plan_inference_plans_the_scripts_model_for_predict(tmp_path):
    from tests.plan.test_run_plan import SCRIPT

    marker = tmp_path / "trained.txt"
    script = tmp_path / "train.py"
    script.write_text(f"MARKER = {str(marker)!r}\n{SCRIPT}")
    out = tmp_path / "plan"
    argv = ["run", "--plan", "--inference", "--system", SYSTEM, "--global-batch", str(BATCH)]
    assert main([*argv, "--candidates", "2", "-o", str(out), str(script)]) == 0
    assert not marker.exists()  # the script stopped at fit
    with open(out / "plans.csv") as f:
        table = list(csv.DictReader(f))
    assert table[0]["fits"] == "True"
    for row in table:  # forward only: one micro-batch per device step and replica
        assert row["inference"] == "True" and row["accumulation"] == "1"
        assert int(row["micro_batch"]) * int(row["replicas"]) == BATCH


def test_a_pipeline_depth_no_grouped_schedule_takes_runs_sequential_or_is_refused():
    # 3 samples per step: only one replica of four stages takes them, and 6 device iterations
    # are not a multiple of its four stages: only the Sequential schedule runs them
    table = ipusim.plan(MODEL, SYSTEM, 3, {"steps": 6}, inference=True, progress=False).table
    assert table["fits"].iloc[0]
    assert set(table["stages"]) == {4} and set(table["replicas"]) == {1}
    assert all(args["schedule"] == "sequential" for args in table["args"])
    # no execution is shorter than the host's round trip
    with pytest.raises(ConfigurationError, match="max_latency_s"):
        ipusim.plan(MODEL, SYSTEM, 16, inference=True, max_latency_s=HOST_S, progress=False)
    with pytest.raises(ConfigurationError, match="do not fill one device step"):
        ipusim.plan(MODEL, SYSTEM, 16, inference=True, samples=8, progress=False)
