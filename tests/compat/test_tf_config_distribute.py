"""tf.config's devices and switches, and tf.distribute's pieces beside IPUStrategy (ReduceOp, the
current strategy, the cluster resolvers IPUMultiWorkerStrategy reads)."""

from __future__ import annotations

import json
import textwrap

import pytest

from ipusim.compat import ipu, tf
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration
from ipusim.errors import ConfigurationError, UnsupportedError


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()
    tf.config.run_functions_eagerly(False)


def test_devices_are_the_host_cpu_and_one_ipu_device_per_configured_entry():
    assert tf.config.list_physical_devices() == [
        tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")
    ]
    assert tf.config.list_physical_devices("GPU") == []
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = [2, 1]  # two TensorFlow devices of 2 and 1 IPUs
    cfg.configure_ipu_system()
    names = [d.name for d in tf.config.list_logical_devices("IPU")]
    assert names == ["/device:IPU:0", "/device:IPU:1"]
    cpu = tf.config.list_physical_devices("CPU")
    tf.config.set_visible_devices(cpu, "CPU")
    assert len(tf.config.get_visible_devices()) == 3  # the IPUs' visibility is untouched
    tf.config.set_visible_devices([], "IPU")
    assert tf.config.get_visible_devices() == cpu
    tf.config.set_visible_devices(tf.config.list_physical_devices("IPU"), "IPU")
    assert len(tf.config.list_logical_devices("IPU")) == 2
    with pytest.raises(ConfigurationError, match="device_type"):
        tf.config.list_physical_devices("FPGA")
    with pytest.raises(ConfigurationError, match="not devices of this machine"):
        tf.config.set_visible_devices([tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")])


def test_switches_are_kept_and_read_back():
    with pytest.warns(UserWarning, match="still"):
        tf.config.run_functions_eagerly(True)
    assert tf.config.functions_run_eagerly() is True
    tf.config.set_soft_device_placement(False)
    assert tf.config.get_soft_device_placement() is False
    tf.config.threading.set_inter_op_parallelism_threads(3)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 3
    with pytest.raises(AttributeError, match="not simulated"):
        tf.config.experimental.set_memory_growth  # noqa: B018


def test_tf_config_cluster_resolver_feeds_the_multi_worker_strategy(monkeypatch):
    cluster = {"worker": ["host0:2222", "host1:2222", "host2:2222"]}
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 2}})
    )
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert resolver.cluster_spec().as_dict() == cluster
    assert (resolver.task_type, resolver.task_id) == ("worker", 2)
    strategy = ipu.ipu_multi_worker_strategy.IPUMultiWorkerStrategy(resolver)
    assert (strategy.worker_count, strategy.task_id) == (3, 2)
    monkeypatch.setenv("TF_CONFIG", "[1, 2]")
    with pytest.raises(ConfigurationError, match="TF_CONFIG is not a JSON object"):
        tf.distribute.cluster_resolver.TFConfigClusterResolver()


def test_the_current_strategy():
    assert not tf.distribute.has_strategy()
    with pytest.raises(UnsupportedError, match="default"):
        tf.distribute.get_strategy()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        assert tf.distribute.has_strategy() and tf.distribute.get_strategy() is strategy
    assert tf.distribute.ReduceOp.SUM.value == "SUM"


def test_gpu_set_up_boilerplate_runs_under_ipusim_run(tmp_path, capsys):
    script = tmp_path / "boilerplate.py"
    script.write_text(textwrap.dedent(
        """
        import tensorflow as tf
        from tensorflow.python import ipu

        for gpu in tf.config.experimental.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
        cfg = ipu.config.IPUConfig()
        cfg.auto_select_ipus = 1
        cfg.configure_ipu_system()
        with ipu.ipu_strategy.IPUStrategy().scope():
            print("STRATEGY", type(tf.distribute.get_strategy()).__name__,
                  [d.name for d in tf.config.list_logical_devices("IPU")])
        """
    ))  # fmt: skip
    result = run_script(script, output=tmp_path / "out", quiet=True)
    assert result.exit_code == 0
    assert "STRATEGY IPUStrategy ['/device:IPU:0']" in capsys.readouterr().out
