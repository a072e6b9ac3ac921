"""The usage scanner tells TF1 programs (which IPU TensorFlow 2 cannot run) from TF2 ones."""

from __future__ import annotations

from bench.api_coverage import api_status
from bench.api_coverage.scan import TF1_ONLY, is_tf1_program, tf1_only


def test_top_level_tf1_names_mark_a_tf1_program():
    tf1 = "import tensorflow as tf\nopt = tf.train.MomentumOptimizer(0.1, 0.9)\n"
    assert is_tf1_program(tf1)
    assert is_tf1_program("import tensorflow as tf\nwith tf.Session() as s:\n    pass\n")
    assert is_tf1_program("import tensorflow as tf\ntf.compat.v1.disable_v2_behavior()\n")
    # the same names through tf.compat.v1 are TensorFlow 2 code
    compat = "import tensorflow.compat.v1 as tf\nc = tf.ConfigProto()\ns = tf.Session()\n"
    assert not is_tf1_program(compat)
    tf2 = "import tensorflow as tf\nopt = tf.keras.optimizers.SGD(momentum=0.9)\n"
    assert not is_tf1_program(tf2)
    assert not tf1_only("tensorflow.train.Checkpoint") and tf1_only("tensorflow.layers.dense")


def test_tf1_only_names_are_absent_from_ipu_tensorflow_2():
    ipu_tf2 = api_status.ipu_names()
    for name in TF1_ONLY:
        public = f"tf.{name}"
        assert public not in ipu_tf2, public
        assert not any(n.startswith(public + ".") for n in ipu_tf2), public
    assert not any(n.startswith("tf.train.") and n.endswith("Optimizer") for n in ipu_tf2)
