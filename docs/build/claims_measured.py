"""The measured figures the prose of README.md and docs/ quotes (wall times, TF-parity errors,
half-precision kernel speed), each checked against the ``bench/results`` file its bench script
wrote, as :mod:`docs.build.claims` checks the simulated ones: a figure edited by hand, or a
results file regenerated without updating the prose, fails ``tests/docs``.

A wall time is never measured by a test (it varies run to run); the prose quotes the committed
result of the bench script named beside it.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path

from docs.build.artefacts import ROOT
from docs.build.claims import README, VALIDATION_JSON, VALIDATION_MD, Claim

RESULTS = ROOT / "bench" / "results"
NUMERICS_MD = ROOT / "docs" / "numerics.md"
SIMULATED_TIME_MD = ROOT / "docs" / "simulated_time.md"


@cache
def _json(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _sci(value: float, digits: int = 2) -> str:
    """``value`` in the prose's scientific form: ``2.9e-7`` (``digits`` significant)."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _span(values: list[float], digits: int = 0) -> tuple[str, str]:
    """The lowest and highest of ``values``, rounded to ``digits`` decimals."""
    return (f"{min(values):.{digits}f}", f"{max(values):.{digits}f}")


def _tf_parity_groups() -> tuple[str, ...]:
    data = _json("tf_parity.json")
    found: list[str] = []
    for group in ("layers", "losses", "optimizers", "metrics"):
        found += [str(data[group]["cases"]), _sci(data[group]["worst"])]
    return tuple(found)


def _tf_parity_training() -> tuple[str, ...]:
    runs = _json("tf_parity.json")["training"]["runs"]
    close = [run["loss_per_step_worst"] for name, run in runs.items() if name != "cnn/rmsprop"]
    rms = runs["cnn/rmsprop"]
    return (
        _sci(max(close)),
        _sci(rms["loss_per_step_worst_first_32"]),
        _sci(rms["loss_per_step_worst"]),
    )


def _tf_parity_spatial() -> tuple[str, ...]:
    data = _json("tf_parity_spatial.json")
    return (str(data["cases"]), _sci(data["worst"]))


def _tf_against_itself() -> tuple[str, ...]:
    """TensorFlow's CNN runs with one thread and with oneDNN against the fixture's (two threads,
    oneDNN off): worst per-step relative loss error, from the two fixture files."""
    import numpy as np

    fixtures = ROOT / "bench" / "tf_parity" / "fixtures"
    with (
        np.load(fixtures / "cnn_branches.npz") as branches,
        np.load(fixtures / "training.npz") as training,
    ):

        def worst(config: str, optimizer: str, steps: int | None = None) -> float:
            want = training[f"cnn/{optimizer}/losses"][:steps]
            got = branches[f"{config}/{optimizer}"][:steps]
            return float(np.max(np.abs(got - want) / np.abs(want)))

        optimizers = ("sgd_momentum", "rmsprop", "adam", "adagrad")
        return (
            _sci(worst("eigen_1thread", "rmsprop")),
            _sci(worst("eigen_1thread", "rmsprop", 40)),
            _sci(worst("eigen_1thread", "adam")),
            _sci(max(worst("onednn_default", o) for o in optimizers)),
        )


def _branches() -> tuple[str, ...]:
    data = _json("tf_parity_branches.json")
    errors, flips = data["errors"], data["first_step_over"]
    ipusim, tf_order, f64 = errors["ipusim"], errors["tf_order"], errors["float64"]
    return (
        str(flips["ipusim"]["rmsprop"]),
        _sci(data["flip"], 1),
        _sci(ipusim["adam"]["eigen_default"]),
        _sci(ipusim["adam"]["eigen_1thread"]),
        _sci(tf_order["rmsprop"]["eigen_1thread"]),
        _sci(tf_order["rmsprop"]["eigen_default"]),
        _sci(tf_order["adam"]["eigen_default"]),
        _sci(f64["rmsprop"]["eigen_default"]),
        _sci(f64["adam"]["eigen_default"]),
        _sci(min(f64["sgd_momentum"].values())),
    )


def _parity_tolerances() -> tuple[str, ...]:
    """The per-step loss bounds tests/numerics/test_tf_parity.py holds the chaotic CNN runs to."""
    text = (ROOT / "tests" / "numerics" / "test_tf_parity.py").read_text(encoding="utf-8")
    target = re.search(r"^LOSS_PER_STEP = (\S+)$", text, flags=re.M)
    adaptive = re.search(r'^ADAPTIVE_CNN = \{"cnn/rmsprop": \((\d+), (\S+), ', text, flags=re.M)
    if target is None or adaptive is None:
        return ("(tolerances not found in test_tf_parity.py)",)
    return (target[1], adaptive[1], adaptive[2])


def _fp16_speed() -> tuple[str, ...]:
    data = _json("fp16_kernels.json")
    rounding = [f"{r['ns_per_element']:.1f}" for r in data["rounding"]]
    matmuls = [o for o in data["ops"] if o["op"].startswith("matmul")]
    convs = [o for o in data["ops"] if o["op"].startswith("conv")]
    step = data["training"][0]
    return (
        *rounding,
        *_span([o["fp16.32_over_fp32"] for o in matmuls]),
        *_span([o["fp16.16_over_fp32"] for o in matmuls]),
        *_span([o["fp16.16_gflops"] for o in matmuls]),
        *_span([o["fp16.32_over_fp32"] for o in convs], 1),
        *_span([o["fp16.16_over_fp32"] for o in convs]),
        f"{step['fp16.32_over_fp32']:.1f}",
        f"{step['fp16.16_over_fp32']:.1f}",
    )


def _fp16_updates() -> tuple[str, ...]:
    updates = _json("fp16_kernels.json")["optimizers"]
    return tuple(f"{1e3 * u['float16_s']:.0f}" for u in updates)


def _validation_wall() -> tuple[str, ...]:
    data = json.loads(VALIDATION_JSON.read_text(encoding="utf-8"))
    return (f"{data['wall_s']:.0f}",)


def _bert_wall() -> tuple[str, ...]:
    data = _json("bert.json")
    return (f"{data['optimizer_steps']:,}", f"{data['wall_s_median']:.1f}")


def _rows() -> dict[str, dict]:
    rows = json.loads(VALIDATION_JSON.read_text(encoding="utf-8"))["rows"]
    return {r["id"]: r for r in rows}


def _ratio_error(rows: dict[str, dict], a: str, b: str) -> str:
    """The error of ipusim's ratio of rows ``a`` and ``b`` against the published ratio."""
    return f"{100 * ((1 + rows[a]['error']) / (1 + rows[b]['error']) - 1):+.1f}"


def _scale_out() -> tuple[str, ...]:
    rows = _rows()
    pairs = (
        ("R2-pod128", "R2-pod64"),
        ("R2-pod256", "R2-pod64"),
        ("BM2-pod128", "BM2-pod64"),
        ("BM2-pod256", "BM2-pod64"),
        ("G5-pod128", "G5-pod64"),
        ("R4-pod256", "R4-pod64"),
        ("BM1-pod128", "BM1-pod64"),
    )
    return tuple(_ratio_error(rows, a, b) for a, b in pairs)


def _chips() -> tuple[str, ...]:
    rows = _rows()
    found: list[str] = []
    for bow, gc200 in (("G5", "R2"), ("R4-pod16", "R1")):
        published = rows[bow]["measured"] / rows[gc200]["measured"]
        predicted = rows[bow]["predicted"] / rows[gc200]["predicted"]
        found += [
            f"{published:.2f}",
            f"{predicted:.2f}",
            f"{100 * (predicted / published - 1):+.1f}",
        ]
    return tuple(found)


def _in_pod() -> tuple[str, ...]:
    rows = _rows()
    one_pod = "R1 R2 R2-pod64 R4-pod16 R4-pod64 G5 B1 B4 B7 B4-pod64 B7-384 G5-pod64 BM1-pod16"
    deep = [100 * rows[i]["error"] for i in ("BM0-pod64", "BM1-pod64", "BM2-pod64")]
    return (
        f"{max(100 * abs(rows[i]['error']) for i in one_pod.split()):.0f}",
        f"{min(deep):.0f}",
        f"{max(deep):.0f}",
    )


def _memory_check() -> tuple[str, ...]:
    """Rows, when every one passes the memory check without a warning (else no count: fails)."""
    rows = _rows().values()
    fits = all(not r["memory_warned"] and r["memory_used"] <= 1.0 for r in rows)
    return (str(len(rows)) if fits else "not all",)


def _gw_constants() -> tuple[str, ...]:
    import tomllib

    preset = ROOT / "ipusim" / "hardware" / "presets" / "system-m2000.toml"
    gw = tomllib.loads(preset.read_text(encoding="utf-8"))["gw_link"]
    return (gw["latency"].removesuffix("us"), gw["collective_bandwidth"].removesuffix("GB/s"))


def _clock_rounding() -> tuple[str, ...]:
    """The spacing of doubles at today's ``time.time()`` (2**30 to 2**31 s: 2004 to 2038)."""
    return (f"{math.ulp(2.0**30) * 1e6:.2f}",)


def _engine_choice() -> tuple[str, ...]:
    from ipusim.engine.simulator import AUTO_FAST_MIN_INSTANCES

    rows = _json("engine_choice.json")["rows"]
    short = rows[0]
    return (
        f"{AUTO_FAST_MIN_INSTANCES:,}",
        f"{short['instances']:,}",
        f"{short['fast_first_s']:.1f}",
        f"{1e3 * short['simpy_first_s']:.0f}",
    )


MEASURED_CLAIMS: tuple[Claim, ...] = (
    Claim(
        NUMERICS_MD,
        r"Results \(`bench/results/tf_parity.json`, one BLAS thread\): (\d+) layer cases "
        r"\(worst relative error\s+"
        r"(\S+)\),\s+(\d+) loss\s+cases \((\S+)\), (\d+) optimizer trajectories of 20 steps "
        r"\((\S+)\),\s+(\d+) metric cases\s+\((\S+)\):",
        _tf_parity_groups,
    ),
    Claim(
        NUMERICS_MD,
        r"every step's loss is\s+within (\S+) of\s+TensorFlow's for the seed MLP with all four "
        r"optimizers and for the CNN with SGD-momentum, Adam\s+and Adagrad\. The CNN with RMSprop "
        r"stays within (\S+) for its first 32 steps, then drifts to\s+(\S+) in the last steps",
        _tf_parity_training,
    ),
    Claim(
        NUMERICS_MD,
        r"reductions\) and ends (\S+) \(RMSprop, (\S+) within the first 40 steps\) and (\S+) "
        r"\(Adam\) from\s+the fixture; with oneDNN on it stays within (\S+) \(",
        _tf_against_itself,
    ),
    Claim(
        NUMERICS_MD,
        r"\(step (\d+) of ipusim's RMSprop run is the first more than (\S+) from the fixture\) .*?"
        r"ipusim's Adam run is within (\S+) of the fixture at\s+every step and (\S+) from "
        r"TensorFlow's one-thread run .*?ipusim's RMSprop run is then (\S+) from TensorFlow's "
        r"one-thread run and (\S+) from the fixture,\s+its Adam run (\S+) from the fixture; a "
        r"float64 GEMM \(ties kept too\) puts RMSprop within (\S+)\s+of the fixture but Adam "
        r"(\S+) and SGD-momentum (\S+) away from it, and SGD-momentum as far\s+from all three",
        _branches,
    ),
    Claim(
        NUMERICS_MD,
        r"The tests hold these two runs to (\S+) over their first (\d+) steps and (\S+) over all 64\.",
        _parity_tolerances,
    ),
    Claim(
        NUMERICS_MD,
        r"LocallyConnected1D/2D:\s+(\d+) cases, worst relative error (\S+) \(forward",
        _tf_parity_spatial,
    ),
    Claim(
        NUMERICS_MD,
        r"rounding costs ([\d.]+) ns per element \(nearest-even\)\s+and ([\d.]+) ns "
        r"\(stochastic\), against ([\d.]+) ns for NumPy's float16 round trip\. A seed-MLP matrix "
        r"product\s+costs (\d+)-(\d+)x float32 in fp16\.32 .*? and (\d+)-(\d+)x in fp16\.16\s+"
        r"\(the AMP emulation: (\d+)-(\d+) GFLOP/s\); the MNIST CNN's second convolution "
        r"([\d.]+)-([\d.]+)x and (\d+)-(\d+)x; a\s+whole seed-MLP training step ([\d.]+)x "
        r"\(fp16\.32\) and ([\d.]+)x \(fp16\.16\)",
        _fp16_speed,
    ),
    Claim(
        NUMERICS_MD,
        r"Float16 weight updates round every operation: (\d+) ms \(SGD\) and (\d+) ms \(Adam\)",
        _fp16_updates,
    ),
    Claim(
        VALIDATION_MD,
        r"ipusim validate\s+# every row, with the leave-one-out refits \((\d+) s, validation.json\)",
        _validation_wall,
    ),
    Claim(
        VALIDATION_MD,
        r"The full run \(`python bench/bench_validation.py`, (\d+) s on 2 cores",
        _validation_wall,
    ),
    Claim(
        VALIDATION_MD,
        r"within\s+([+-]\d+\.\d)% / ([+-]\d+\.\d)% \(R2\), ([+-]\d+\.\d)% / ([+-]\d+\.\d)% \(BM2\), "
        r"and, not fitted, ([+-]\d+\.\d)% \(G5-pod128 against G5-pod64\),\s+([+-]\d+\.\d)% "
        r"\(R4-pod256 against R4-pod64\) and ([+-]\d+\.\d)% \(BM1-pod128 against BM1-pod64",
        _scale_out,
    ),
    Claim(
        VALIDATION_MD,
        r"published ([\d.]+)\) comes out at ([\d.]+) \(([+-]\d+\.\d)%\)\. The pair\s+R1 / R4-pod16 "
        r"\(SDK 2\.1 against a pre-2\.5 Bow table, published ([\d.]+)\) comes out at\s+([\d.]+) "
        r"\(([+-]\d+\.\d)%\)",
        _chips,
    ),
    Claim(
        VALIDATION_MD,
        r"from one GC200 to a Bow Pod64, within (\d+)%; the 8-IPU BERT pipelines of the\s+MLPerf "
        r"logs \(BM0-pod64, BM1-pod64, BM2-pod64\) less well, \+(\d+)% to \+(\d+)%",
        _in_pod,
    ),
    Claim(
        VALIDATION_MD,
        r"\(`gw_link\.latency`, (\d+) µs\).*?\(`gw_link\.collective_bandwidth`, ([\d.]+) GB/s per "
        r"Pod\)",
        _gw_constants,
    ),
    Claim(
        VALIDATION_MD,
        r"All (\d+)\s+expressible configurations pass the memory check as they did on hardware",
        _memory_check,
    ),
    Claim(
        README,
        r"so\s+(\S+) BERT-Large\s+optimizer steps on a POD16 take ([\d.]+) s",
        _bert_wall,
    ),
    Claim(
        README,
        r"below (\S+) block instances\), which finishes before the\s+recurrence's compiled code "
        r"has loaded: a (\S+)-instance run takes ([\d.]+) s on the fast path against\s+(\d+) ms "
        r"on SimPy",
        _engine_choice,
    ),
    Claim(
        SIMULATED_TIME_MD,
        r"the rounding of a double near the CPU's clock value \(([\d.]+) us for `time.time\(\)`\)",
        _clock_rounding,
    ),
)


def _row_errors() -> tuple[dict[str, str], dict[str, str]]:
    """Each validation row's signed error and leave-one-out error, as the prose writes them."""
    rows = json.loads(VALIDATION_JSON.read_text(encoding="utf-8"))["rows"]
    return (
        {r["id"]: f"{100 * r['error']:+.1f}" for r in rows},
        {r["id"]: f"{100 * r['loo_error']:+.1f}" for r in rows},
    )


def row_error_problems(doc: Path = VALIDATION_MD) -> list[str]:
    """Every row error ``doc``'s prose quotes next to its row, against validation.json.

    The forms read: ``**ID (+x.y%)``, ``ID (+x.y%``, ``(ID, ...: +x.y%)``, ``+x.y% (ID,`` and
    ``ID +x.y%`` (a leave-one-out error where the sentence says so).
    """
    errors, loo = _row_errors()
    prose = "\n".join(
        line
        for line in re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S).split(
            "\n"
        )
        if not line.startswith("|")
    )
    ids = "|".join(re.escape(i) for i in sorted(errors, key=len, reverse=True))
    pct = r"([+-]\d+\.\d)%"
    forms = (
        (rf"\b({ids}) \({pct}", 1, 2),
        (rf"\(({ids}), [^():%]*: {pct}\)", 1, 2),
        (rf"(?<!/ ){pct} \(({ids})[,)]", 2, 1),
    )
    problems, seen = [], 0
    for pattern, row, value in forms:
        for found in re.finditer(pattern, prose):
            seen += 1
            if found[value] != errors[found[row]]:
                problems.append(f"{doc.name}: {found[0]!r}: {found[row]} is {errors[found[row]]}%")
    for found in re.finditer(rf"leave-one-out errors \(({ids}) {pct}, ({ids}) {pct}\)", prose):
        seen += 1
        for row, value in ((found[1], found[2]), (found[3], found[4])):
            if value != loo[row]:
                problems.append(f"{doc.name}: {found[0]!r}: {row}'s is {loo[row]}%")
    if not seen:
        problems.append(f"{doc.name}: no row error found in the prose")
    return problems
