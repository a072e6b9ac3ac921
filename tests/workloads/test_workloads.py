"""The workload scripts run (timing-only for the large models) and their reports hold up."""

from __future__ import annotations

import pytest

from ipusim.config import reset_ipu_configuration
from ipusim.lowering import OutOfMemoryError


@pytest.fixture(autouse=True)
def _clean():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def test_resnet50_pipelined_at_the_documented_split(tmp_path) -> None:
    from workloads import resnet50

    report = resnet50.main(
        [
            "--timing-only",
            "--stages",
            "2",
            "--split",
            "conv4_block2_add",
            "--micro-batch",
            "4",
            "--steps",
            "8",
            "--accumulation",
            "8",
            "--image-size",
            "96",
            "--output",
            str(tmp_path / "r"),
        ]
    )
    assert report.extra["replicas"] == 1 and report.steps == 8
    df = report.trace.to_dataframe()
    stage1_layers = set(df[(df.ipu == 1) & (df.phase == "fwd")].layer)
    assert "conv4_block3_add" in stage1_layers and "conv4_block2_add" not in stage1_layers
    assert (tmp_path / "r" / "trace.json").exists()


def test_bert_base_runs_replicated_and_pipelined() -> None:
    from workloads import bert

    report = bert.main(
        [
            "--size",
            "base",
            "--timing-only",
            "--stages",
            "2",
            "--replicas",
            "2",
            "--system",
            "M2000",
            "--micro-batch",
            "2",
            "--sequence",
            "64",
            "--steps",
            "8",
            "--accumulation",
            "4",
        ]
    )
    assert report.extra["replicas"] == 2
    assert report.trace.ipus == (0, 1, 2, 3)
    assert set(report.trace.to_dataframe(replicas=True).ipu) - {-1} == {0, 1, 2, 3}


@pytest.mark.slow
def test_bert_large_on_pod16_fits_as_4_stages_x_4_replicas_but_not_on_one_ipu() -> None:
    from workloads import bert

    report = bert.main(
        [
            "--size",
            "large",
            "--timing-only",
            "--stages",
            "4",
            "--replicas",
            "4",
            "--system",
            "POD16",
            "--micro-batch",
            "4",
            "--steps",
            "100",
            "--accumulation",
            "20",
            "--schedule",
            "interleaved",
            "--recompute",
            "--steps-per-execution",
            "100",
        ]
    )
    assert report.steps == 100 and report.extra["replicas"] == 4
    memory = report.memory
    assert (memory.total_bytes <= memory.budget_bytes).all()  # consistent with fitting
    assert (memory.max_tile_bytes <= memory.tile_budget_bytes).all()
    assert len(memory) == 16
    categories = [
        c
        for c in memory.columns
        if c.endswith("_bytes")
        and c not in ("total_bytes", "budget_bytes", "max_tile_bytes", "tile_budget_bytes")
    ]
    assert (memory[categories].sum(axis=1) == memory.total_bytes).all()
    reset_ipu_configuration()
    with pytest.raises(OutOfMemoryError, match=r"Out of memory on IPU 0.*weights"):
        bert.main(
            [
                "--size",
                "large",
                "--timing-only",
                "--stages",
                "1",
                "--system",
                "IPU",
                "--micro-batch",
                "4",
                "--steps",
                "16",
                "--accumulation",
                "16",
            ]
        )


def test_a_workload_runs_through_ipusim_run(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "workloads" / "mnist_pipelined.py"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ipusim.cli",
            "run",
            str(script),
            "-o",
            str(tmp_path / "out"),
            "--",
            "--timing-only",
            "--steps",
            "8",
            "--accumulation",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    traces = list((tmp_path / "out").rglob("trace.json"))
    assert traces, out.stdout[-2000:]


def test_bert_places_attention_and_feed_forward_halves_on_different_ipus() -> None:
    from workloads import bert

    # MLPerf v2.0's att_ffn_placement (IPU 1..7, then IPU 0): by hand, stage s ends after half
    # number (halves so far - 1): attention of layer i is half 2i, its feed-forward half 2i + 1.
    attention, ffn = [0, 3, 3, 3, 4, 3, 4, 3, 1], [0, 3, 3, 3, 3, 4, 3, 4, 1]
    assert bert.half_layer_splits("large", attention, ffn) == [
        "embeddings_dropout",
        "encoder_2_ffn_norm",  # 6 halves
        "encoder_5_ffn_norm",  # 12
        "encoder_8_ffn_norm",  # 18
        "encoder_12_attention_norm",  # 25: half 24 is layer 12's attention
        "encoder_15_ffn_norm",  # 32
        "encoder_19_attention_norm",  # 39
        "encoder_22_ffn_norm",  # 46
    ]
    with pytest.raises(ValueError, match="contiguous"):
        bert.half_layer_splits("large", [1, 23], [2, 22])  # 1 attention, 2 FFN from the start
    report = bert.main(
        [
            "--size",
            "base",
            "--timing-only",
            "--stages",
            "3",
            "--system",
            "M2000",
            "--micro-batch",
            "2",
            "--sequence",
            "32",
            "--steps",
            "6",
            "--accumulation",
            "6",
            "--layers-per-ipu",
            "0",
            "7",
            "5",
            "--ffn-per-ipu",
            "0",
            "6",
            "6",
        ]
    )
    df = report.trace.to_dataframe()
    fwd = df[df.phase == "fwd"]
    assert "encoder_6_attention" in set(fwd[fwd.ipu == 1].layer)  # layer 6's attention half
    assert "encoder_6_intermediate" in set(fwd[fwd.ipu == 2].layer)  # and its FFN half
