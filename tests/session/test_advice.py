"""report.advice(): each change measured by simulating the run again, best first, and the top
line is the change that raises throughput most, checked by running the program with that change
through its own front end (the workload's flags)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from ipusim.errors import UnsupportedError
from ipusim.trace import Report
from workloads import bert, mnist_cnn

#: The Keras MNIST CNN of the validation rows K1 / K8 (200 steps of 64 on one GC200).
CNN = "--timing-only --steps 200 --micro-batch 64 --optimizer sgd --system IPU"
BERT = (
    "--size large --system POD16 --stages 4 --replicas 4 --micro-batch 4 --accumulation 16 "
    "--steps 112 --recompute --timing-only"
)


def _run(module, argv: str) -> Report:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return module.main(argv.split())


def _micro_batch_flags(change: str) -> str:
    """The workload flags of a larger micro-batch change: ``batch_size=N per replica (now M;
    S steps per epoch (same samples)[, steps_per_execution=X][,
    gradient_accumulation_steps_per_replica=G, ...])``."""
    batch = re.match(r"batch_size=(\d+) ", change)[1]
    steps = re.search(r"; (\d+) steps per epoch", change)[1]
    flags = f"--micro-batch {batch} --steps {steps}"
    if spe := re.search(r"steps_per_execution=(\d+)", change):
        flags += f" --steps-per-execution {spe[1]}"
    if ga := re.search(r"gradient_accumulation_steps_per_replica=(\d+)", change):
        flags += f" --accumulation {ga[1]}"
    return flags


def _flags(change: str) -> str | None:
    """The workload flags that make the same change (None: no flag expresses it)."""
    if change.startswith("batch_size="):
        return _micro_batch_flags(change)
    name, _, value = change.partition("=")
    value = value.split()[0] if value else ""
    return {
        "steps_per_execution": f"--steps-per-execution {value}",
        "io_tiles.num_io_tiles": f"--io-tiles {value}",
        "outfeed only the loss (metrics": "--metrics none",
        "pipeline_schedule": f"--schedule {value.lower()}",
        "offload_weight_update_variables": f"--offload {'on' if value == 'True' else 'off'}",
        "gradient_accumulation_steps_per_replica": f"--accumulation {value}",
    }.get(name)


def _replace(argv: str, flags: str) -> str:
    """``argv`` with each ``--flag value`` of ``flags`` replacing its own (or appended)."""
    words, new = argv.split(), flags.split()
    for flag, value in zip(new[::2], new[1::2]):
        if flag in words:
            words[words.index(flag) + 1] = value
        else:
            words += [flag, value]
    return " ".join(words)


def _check_top_by_running(module, argv: str, extra: dict[str, str] | None = None):
    report = _run(module, argv)
    advice = report.advice()
    assert advice, "no change helped"
    assert [a.gain for a in advice] == sorted((a.gain for a in advice), reverse=True)
    measured = {}
    for item in advice:
        flags = _flags(item.change)
        if flags is None:
            continue  # e.g. 8-bit input: the workload has no flag for it
        flags = (extra or {}).get(flags.split()[0], "") + " " + flags
        rerun = _run(module, _replace(argv, flags.strip()))
        measured[item.change] = rerun.throughput_samples_per_s
        assert rerun.throughput_samples_per_s == pytest.approx(item.throughput, rel=1e-9), item
    assert advice[0].change in measured
    assert measured[advice[0].change] == max(measured.values())
    assert measured[advice[0].change] > report.throughput_samples_per_s
    return report, advice


@pytest.mark.parametrize("spe", [1, 10, 100])
def test_keras_cnn_top_advice_is_the_best_change(spe):
    report, advice = _check_top_by_running(mnist_cnn, f"{CNN} --steps-per-execution {spe}")
    print(f"spe {spe}: {report.throughput_samples_per_s:,.0f} samples/s;", advice[0].line())


def test_bert_large_pod16_top_advice_is_the_best_change_and_leaves_out_what_does_not_fit():
    # Twice the accumulation needs whole weight updates per execution: 128 steps, not 112.
    report, advice = _check_top_by_running(bert, BERT, {"--accumulation": "--steps 128"})
    assert advice[0].change.startswith("gradient_accumulation_steps_per_replica=32")
    # Keeping the optimizer state on chip does not fit (checked by the front end too).
    assert not any(a.change == "offload_weight_update_variables=False" for a in advice)
    with pytest.raises(Exception, match="Out of memory"):
        _run(bert, f"{BERT} --offload off")


def test_a_loaded_report_cannot_be_simulated_again(tmp_path):
    report = _run(mnist_cnn, f"{CNN} --steps-per-execution 100")
    report.save(tmp_path / "r")
    with pytest.raises(UnsupportedError, match="loaded from disk"):
        Report.load(tmp_path / "r").advice()


def test_the_summary_lists_the_top_advice_on_request():
    report = _run(mnist_cnn, f"{CNN} --steps-per-execution 1")
    assert "Would help" not in report.summary()
    lines = report.summary(advice=2).split("Would help (each simulated)\n")[1].splitlines()
    assert lines == [f"  {a.line()}" for a in report.advice(top=2)]
