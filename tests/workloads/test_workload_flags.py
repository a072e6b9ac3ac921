"""The workload scripts' flags do what their help says (one test per flag), timing-only so each
run takes about a second."""

from __future__ import annotations

import contextlib
import io

import pytest

from ipusim.errors import ConfigurationError
from workloads import bert, mnist_mlp


def _run(module, argv: list[str]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return module.main(argv)


def _outfeed_bytes(report) -> set[int]:
    df = report.trace.to_dataframe()
    return set(df[df.name == "outfeed copy"].bytes.tolist())


def test_steps_is_the_micro_batch_steps_of_an_epoch():
    """--steps 30 at micro-batch 16: 30 steps and 480 samples, whatever the data set's size."""
    report = _run(mnist_mlp, ["--timing-only", "--steps", "30", "--micro-batch", "16"])
    assert report.steps == 30 and report.samples == 30 * 16
    report = _run(mnist_mlp, ["--timing-only", "--steps", "600", "--epochs", "2"])
    assert report.steps == 1200  # more steps than 8,000 images hold: the data repeats


def test_steps_per_execution_splits_the_steps_into_executions():
    report = _run(mnist_mlp, ["--timing-only", "--steps", "40", "--steps-per-execution", "10"])
    assert report.extra["executions"] == 4 and report.extra["steps_per_execution"] == 10


def test_steps_per_execution_that_does_not_divide_the_steps_is_refused_before_running():
    """The issue's case: 500 steps per execution of a 50-step epoch gave "0 samples"."""
    with pytest.raises(
        ConfigurationError, match=r"--steps-per-execution 500 must divide --steps 50"
    ):
        _run(mnist_mlp, ["--timing-only", "--steps", "50", "--steps-per-execution", "500"])


@pytest.mark.parametrize("flag", ["--steps", "--epochs", "--micro-batch"])
def test_non_positive_counts_are_refused(flag):
    with pytest.raises(ConfigurationError, match=f"{flag} must be a positive integer"):
        _run(mnist_mlp, ["--timing-only", flag, "0"])


def test_metrics_none_outfeeds_only_the_loss():
    """One fp32 loss per step (4 bytes) with --metrics none; loss and accuracy (8) by default."""
    assert _outfeed_bytes(_run(mnist_mlp, ["--timing-only", "--steps", "10"])) == {8}
    for none in (["--metrics", "none"], ["--metrics"]):
        report = _run(mnist_mlp, ["--timing-only", "--steps", "10", *none])
        assert _outfeed_bytes(report) == {4}


def test_metrics_are_compiled_into_the_large_workloads_too():
    """BERT outfeeds its loss only by default; --metrics accuracy adds one fp32 per step."""
    argv = ["--size", "base", "--timing-only", "--stages", "4", "--system", "M2000"]
    argv += ["--micro-batch", "1", "--steps", "8", "--accumulation", "8", "--sequence", "32"]
    base = _outfeed_bytes(_run(bert, argv))
    with_accuracy = _outfeed_bytes(_run(bert, [*argv, "--metrics", "accuracy"]))
    assert len(base) == 1 and len(with_accuracy) == 1
    assert with_accuracy.pop() - base.pop() == 4


def test_bert_checkpoint_every_k_layers():
    """--checkpoint-every 3 on BERT-Base's 12 layers: checkpoints after layers 2, 5, 8 and 11;
    a stage ends after its last layer's checkpoint where that layer has one."""
    import ipusim

    with ipusim.IPUStrategy().scope():
        model = bert.bert("base", 32, 4, vocab=1000, checkpoint_every=3)
    names = [layer.name for layer in model.layers if layer.name.endswith("_checkpoint")]
    assert names == [f"encoder_{i}_checkpoint" for i in (2, 5, 8, 11)]
    assert bert.split_points("base", [6, 6], checkpoint_every=3) == ["encoder_5_checkpoint"]
    assert bert.split_points("base", [5, 7], checkpoint_every=3) == ["encoder_4_ffn_norm"]
    assert bert.split_points("base", [5, 7], checkpoint_every=True) == ["encoder_4_checkpoint"]
    flags = ["--size", "base", "--sequence", "32", "--masked", "4", "--vocab", "1000"]
    flags += ["--timing-only", "--micro-batch", "1", "--accumulation", "4", "--steps", "4"]
    flags += ["--stages", "2", "--layers-per-ipu", "6", "6", "--recompute"]
    report = _run(bert, [*flags, "--recomputation-mode", "interleaved", "--checkpoint-every", "3"])
    assert report.samples == 4
    with pytest.raises(ConfigurationError, match="--checkpoint-every must be 0"):
        _run(bert, [*flags, "--checkpoint-every", "-1"])
