"""PopDist under ipusim: the popdist API from poprun's environment, ``Dataset.shard``, and
``ipusim run --instances 2 --replicas 4`` running a PopDist script as two instances with one
combined report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ipusim.compat import popdist
from ipusim.compat.popdist import tensorflow as popdist_tf
from ipusim.compat.poprun import check_job, instance_environment
from ipusim.config import IPUConfig
from ipusim.data import Dataset
from ipusim.errors import ConfigurationError, InputDataError
from ipusim.strategy import PopDistStrategy

REPO = Path(__file__).resolve().parents[2]
SAMPLES, BATCH, SPE, EPOCHS = 512, 8, 4, 2
INSTANCES, REPLICAS = 2, 4

SCRIPT = textwrap.dedent(
    f"""
    import hashlib

    import numpy as np
    import popdist
    import popdist.tensorflow
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.python import ipu
    from tensorflow.python.ipu.distributed.popdist_strategy import PopDistStrategy

    print("SEES", popdist.isPopdistEnvSet(), popdist.getNumInstances(),
          popdist.getInstanceIndex(), popdist.getNumTotalReplicas(),
          popdist.getNumLocalReplicas(), popdist.getReplicaIndexOffset(),
          popdist.getNumIpusPerReplica())
    config = ipu.config.IPUConfig()
    popdist.tensorflow.set_ipu_config(config, ipus_per_replica=1)
    config.configure_ipu_system()
    print("CONFIG", config.auto_select_ipus,
          config.experimental.multi_replica_distribution.process_count,
          config.experimental.multi_replica_distribution.process_index)
    strategy = PopDistStrategy()
    rng = np.random.default_rng(0)
    x = rng.random(({SAMPLES}, 16)).astype(np.float32)
    y = rng.integers(0, 4, {SAMPLES}).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.shard(num_shards=popdist.getNumInstances(), index=popdist.getInstanceIndex())
    print("SHARD", len(dataset))
    dataset = dataset.batch({BATCH}, drop_remainder=True)
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
        model.compile(optimizer="sgd",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      steps_per_execution={SPE})
        history = model.fit(dataset, epochs={EPOCHS}, verbose=0)
        print("REPLICAS_IN_SYNC", strategy.num_replicas_in_sync)
        print("WEIGHTS", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights()))
              .hexdigest())
    """
)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("popdist")
    script = folder / "popdist_script.py"
    script.write_text(SCRIPT)
    out = folder / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ipusim",
            "run",
            "--instances",
            str(INSTANCES),
            "--replicas",
            str(REPLICAS),
            "-o",
            str(out),
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done, out


def _tagged(text: str, instance: int, key: str) -> list[str]:
    pattern = rf"^\[1,{instance}\]<stdout>:{key} (.*)$"
    return [m.group(1) for m in re.finditer(pattern, text, flags=re.MULTILINE)]


def test_each_instance_sees_its_place_in_the_job(job):
    done, _ = job
    local = REPLICAS // INSTANCES
    for k in range(INSTANCES):
        assert _tagged(done.stdout, k, "SEES") == [
            f"True {INSTANCES} {k} {REPLICAS} {local} {k * local} 1"
        ]
        # set_ipu_config: the instance's IPUs (2 local replicas x 1 IPU), the job's processes
        assert _tagged(done.stdout, k, "CONFIG") == [f"[{local}] {INSTANCES} {k}"]
        assert _tagged(done.stdout, k, "SHARD") == [str(SAMPLES // INSTANCES)]
        assert _tagged(done.stdout, k, "REPLICAS_IN_SYNC") == [str(INSTANCES)]


def test_the_instances_reduce_over_every_replica_and_keep_identical_weights(job):
    # Each instance trains on its own shard; only a reduction over the whole job's replicas
    # (the other instance's included) leaves both with the same weights, bit for bit.
    done, _ = job
    weights = [_tagged(done.stdout, k, "WEIGHTS") for k in range(INSTANCES)]
    assert len(weights[0]) == 1
    assert weights[0] == weights[1]


def test_one_combined_report_of_the_whole_job(job):
    _, out = job
    combined = sorted(p.name for p in out.iterdir() if not p.name.startswith("instance-"))
    assert combined == ["01-fit"]
    figures = json.loads((out / "01-fit" / "report.json").read_text())
    # each instance: 256 samples -> 32 batches of 8 -> 16 steps of its 2 local replicas per
    # epoch; 2 epochs -> 32 steps; every step consumes a batch on each of the job's 4 replicas
    steps = (SAMPLES // INSTANCES // BATCH) // (REPLICAS // INSTANCES) * EPOCHS
    assert figures["steps"] == steps == 32
    assert figures["samples"] == steps * BATCH * REPLICAS == SAMPLES * EPOCHS
    assert figures["extra"]["replicas"] == REPLICAS
    assert figures["extra"]["instances"] == INSTANCES
    assert figures["extra"]["executions"] == steps // SPE
    table = pd.read_csv(out / "01-fit" / "instances.csv")
    assert list(table["instance"]) == [0, 1]
    assert list(table["steps"]) == [steps, steps]
    assert figures["seconds"] == pytest.approx(table["seconds"].max(), rel=1e-12)
    for k in range(INSTANCES):
        assert (out / f"instance-{k}" / "01-fit" / "report.json").is_file()


def test_popdist_without_poprun_is_one_instance_holding_every_replica(monkeypatch):
    for name in popdist.ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    assert not popdist.isPopdistEnvSet()
    assert (popdist.getNumInstances(), popdist.getInstanceIndex()) == (1, 0)
    assert (popdist.getNumTotalReplicas(), popdist.getNumLocalReplicas()) == (1, 1)
    assert popdist.getReplicaIndexOffset() == 0 and popdist.getDeviceId() == 0
    assert popdist.execute_on_instances({0}, lambda a: a + 1, 1) == 2


def test_popdist_reads_the_instance_environment(monkeypatch):
    for name, value in instance_environment(2, 4, 16, 2).items():
        monkeypatch.setenv(name, value)
    assert popdist.isPopdistEnvSet()
    assert popdist.getNumInstances() == 4 and popdist.getInstanceIndex() == 2
    assert popdist.getNumLocalReplicas() == 4 and popdist.getReplicaIndexOffset() == 8
    # 4 local replicas x 2 IPUs = 8 IPUs: the first group of 8 in the 16-IPU listing is index
    # 16 singles + 8 pairs + 4 fours = 28
    assert popdist.getDeviceId() == 28
    assert popdist.execute_on_instances({0, 1}, lambda: "ran") is None
    config = popdist_tf.set_ipu_config(IPUConfig())
    assert config.auto_select_ipus == 8
    distribution = config.experimental.multi_replica_distribution
    assert (distribution.process_count, distribution.process_index) == (4, 2)
    with pytest.raises(ConfigurationError, match="2 IPUs per replica"):
        popdist_tf.set_ipu_config(IPUConfig(), ipus_per_replica=1)
    strategy = PopDistStrategy()
    assert strategy.worker_count == 4 and strategy.num_replicas_in_sync == 4


def test_job_numbers_are_checked():
    with pytest.raises(ConfigurationError, match="multiple of 2"):
        check_job(2, 3, 1)
    with pytest.raises(ConfigurationError, match="--instances"):
        check_job(0, 4, 1)


def test_dataset_shard_keeps_every_nth_element_from_index():
    data = Dataset.range(10)
    assert [int(v) for v in data.shard(3, 0)] == [0, 3, 6, 9]
    assert [int(v) for v in data.shard(3, 2)] == [2, 5, 8]
    assert [len(data.shard(3, i)) for i in range(3)] == [4, 3, 3]
    batches = Dataset.range(7).batch(2).shard(2, 1)  # batches [2, 3] and [6]
    assert [list(map(int, b)) for b in batches] == [[2, 3], [6]]
    assert [int(v) for v in Dataset.range(4).repeat().shard(2, 1).take(3)] == [1, 3, 1]
    with pytest.raises(InputDataError, match="smaller than num_shards"):
        data.shard(2, 2)
    with pytest.raises(ValueError):
        data.shard(0, 0)


LOOP_SCRIPT = textwrap.dedent(
    """
    import hashlib

    import numpy as np
    import popdist
    import popdist.tensorflow
    import tensorflow as tf
    from tensorflow import keras
    from tensorflow.python import ipu

    config = ipu.config.IPUConfig()
    popdist.tensorflow.set_ipu_config(config, ipus_per_replica=1)
    config.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    rng = np.random.default_rng(popdist.getInstanceIndex())  # each instance its own data
    x = rng.random((8, 6)).astype(np.float32)
    y = rng.random((8, 1)).astype(np.float32)
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(1, kernel_initializer="ones")])
        model.build((None, 6))
        optimizer = ipu.optimizers.CrossReplicaOptimizer(keras.optimizers.SGD(0.1))

        @tf.function(experimental_compile=True)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        for _ in range(3):
            strategy.run(step, args=(x, y))
    print("WEIGHTS", hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights()))
          .hexdigest())
    """
)


@pytest.mark.parametrize("replicas", [2, 4])
def test_custom_loop_instances_reduce_together(tmp_path, replicas):
    # One and two local replicas per instance: CrossReplicaOptimizer's mean spans the job, so
    # instances fed different data end with the same weights.
    script = tmp_path / "loop_script.py"
    script.write_text(LOOP_SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "ipusim", "run", "--instances", "2", "--replicas", str(replicas),
         "-o", str(tmp_path / "out"), str(script)],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    weights = [_tagged(done.stdout, k, "WEIGHTS") for k in range(2)]
    assert len(weights[0]) == 1
    assert weights[0] == weights[1]
