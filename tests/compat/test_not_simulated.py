"""A TensorFlow / Keras name ipusim lacks raises ipusim's own error naming it (issue 22, item 2),
``hasattr`` still works, and ``ipusim run`` says the gap is in ipusim, not in the script."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ipusim import cli
from ipusim.compat import keras, tf
from ipusim.compat.not_simulated import NOT_SIMULATED, lookup, message, public_name
from ipusim.compat.runner import redirect_imports
from ipusim.config import reset_ipu_configuration
from ipusim.errors import IPUSimError, NotSimulatedError, NotSimulatedModuleError


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def test_errors_are_also_the_builtin_types_python_code_catches():
    assert issubclass(NotSimulatedError, AttributeError) and issubclass(
        NotSimulatedError, IPUSimError
    )
    assert issubclass(NotSimulatedModuleError, ModuleNotFoundError)
    assert issubclass(NotSimulatedModuleError, IPUSimError)


def test_a_missing_attribute_names_the_public_name():
    with pytest.raises(NotSimulatedError, match=r"`tf.keras.layers.NoSuchLayer` is not simulated"):
        keras.layers.NoSuchLayer  # noqa: B018
    with pytest.raises(NotSimulatedError, match=r"`tf.no_such_function` is not simulated"):
        tf.no_such_function  # noqa: B018
    assert not hasattr(keras.layers, "NoSuchLayer") and not hasattr(tf, "no_such_function")
    assert getattr(keras.losses, "NoSuchLoss", 7) == 7


def test_the_table_reason_and_replacement_are_in_the_message():
    reason, instead = NOT_SIMULATED["tf.distribute.MirroredStrategy"]
    text = message("tensorflow.distribute.MirroredStrategy")
    assert reason in text and instead in text and "docs/api.md" in text
    assert lookup("tf.lite.Interpreter") == NOT_SIMULATED["tf.lite.*"]  # a module entry
    assert lookup("tf.keras.layers.Dense") is None
    assert public_name("keras.layers.Dense") == "tf.keras.layers.Dense"
    assert public_name("tensorflow.python.keras.layers") == "tf.keras.layers"


def test_imports_under_ipusim_run_raise_the_module_error():
    with redirect_imports():
        with pytest.raises(NotSimulatedModuleError, match=r"`tf.keras.layers.NoSuchLayer`"):
            from tensorflow.keras.layers import NoSuchLayer  # noqa: F401
        with pytest.raises(NotSimulatedModuleError, match=r"`tf.no_such_module`") as info:
            import tensorflow.no_such_module  # noqa: F401
        assert info.value.name == "tensorflow.no_such_module"
        from tensorflow.keras.layers import Dense  # a name ipusim has still imports

        assert Dense is keras.layers.Dense


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("import tensorflow as tf\n\nstrategy = tf.no_such_strategy()\n", "`tf.no_such_strategy`"),
        ("from keras.layers import NoSuchLayer\n", "`tf.keras.layers.NoSuchLayer`"),
        ("import tensorflow.no_such_module\n", "`tf.no_such_module`"),
    ],
)
def test_ipusim_run_says_the_gap_is_in_ipusim(tmp_path, capsys, body, name):
    script = _script(tmp_path, "uses_a_missing_name.py", body)
    assert cli.main(["run", str(script), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "uses_a_missing_name.py" in err
    last = err.strip().splitlines()[-1]
    assert "gap in ipusim" in last and name in last and "docs/api.md" in last
    assert "in the script's own code" not in err and "bug in ipusim" not in err


def test_internal_module_paths_public_programs_import_resolve():
    with redirect_imports():
        from keras.optimizer_v2 import optimizer_v2
        from keras.optimizer_v2.gradient_descent import SGD
        from tensorflow.python.data.ops import dataset_ops
        from tensorflow.python.training import optimizer

        assert SGD is keras.optimizers.SGD
        assert optimizer_v2.OptimizerV2 is keras.optimizers.Optimizer
        assert dataset_ops.Dataset is tf.data.Dataset
        assert optimizer.__name__.endswith("training.optimizer")
        with pytest.raises(NotSimulatedError, match=r"`tf.keras.optimizer_v2.adam.NoSuch`"):
            from keras.optimizer_v2 import adam

            adam.NoSuch  # noqa: B018


def test_namespaces_of_the_compat_modules_are_guarded_too():
    assert tf.data.experimental.AUTOTUNE == tf.data.AUTOTUNE
    with pytest.raises(NotSimulatedError, match=r"`tf.data.experimental.no_such_thing`"):
        tf.data.experimental.no_such_thing  # noqa: B018
    assert not hasattr(tf.errors, "NoSuchError")


def test_internal_ops_and_framework_paths_read_the_public_names():
    with redirect_imports():
        from keras.utils import tf_inspect
        from tensorflow.python.framework import dtypes
        from tensorflow.python.ops import math_ops, nn_ops

        assert math_ops.reduce_sum is tf.reduce_sum and math_ops.cast is tf.cast
        assert nn_ops.relu is tf.nn.relu and dtypes.float32 is tf.float32
        import inspect

        assert tf_inspect.getfullargspec is inspect.getfullargspec
        with pytest.raises(NotSimulatedError, match=r"`tf.python.ops.math_ops.no_such_op`"):
            math_ops.no_such_op  # noqa: B018
