"""``IPUEstimator`` under ``ipusim run``: a train / evaluate / predict script written as
Graphcore's estimator examples are, against a NumPy reference of the same SGD training."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import pytest

from ipusim.compat import ipu
from ipusim.compat.runner import run_script
from ipusim.config import reset_ipu_configuration

SCRIPT = textwrap.dedent(
    """
    import json

    import numpy as np
    import tensorflow.compat.v1 as tf
    from tensorflow.python import ipu

    tf.disable_v2_behavior()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)


    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((x, y))
        return dataset.batch(params["batch_size"], drop_remainder=True)


    def model_fn(features, labels, mode, params):
        dense = tf.keras.layers.Dense(1, kernel_initializer="zeros", use_bias=False)
        predictions = dense(features)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"y": predictions})
        error = predictions - labels
        loss = tf.reduce_mean(tf.square(error))
        if mode == tf.estimator.ModeKeys.EVAL:
            metrics = {"mae": tf.metrics.mean(tf.abs(error))}
            return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
        optimizer = tf.train.GradientDescentOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
        return ipu.ipu_estimator.IPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


    ipu_options = ipu.config.IPUConfig()
    ipu_options.auto_select_ipus = 1
    config = ipu.ipu_run_config.RunConfig(
        ipu_run_config=ipu.ipu_run_config.IPURunConfig(
            iterations_per_loop=4, ipu_options=ipu_options
        ),
        log_step_count_steps=4,
    )
    estimator = ipu.ipu_estimator.IPUEstimator(
        config=config, model_fn=model_fn, params={"learning_rate": 0.1, "batch_size": 8}
    )
    estimator.train(input_fn=input_fn, steps=8)
    weights = estimator.get_variable_value("dense/kernel")
    estimator.train(input_fn=input_fn, steps=4)
    metrics = estimator.evaluate(input_fn=input_fn, steps=8)
    predictions = [p["y"] for p in estimator.predict(input_fn=input_fn)]
    print("RESULT", json.dumps({
        "after8": weights.ravel().tolist(),
        "after12": estimator.get_variable_value("dense/kernel").ravel().tolist(),
        "metrics": metrics,
        "predictions": np.concatenate(predictions).tolist(),
    }))
    """
)


@pytest.fixture(autouse=True)
def _fresh():
    reset_ipu_configuration()
    yield
    reset_ipu_configuration()


def _reference() -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4))
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]])
    w = np.zeros((4, 1))
    history = {}
    batches = [(x[i : i + 8], y[i : i + 8]) for i in range(0, 64, 8)]
    # The second train() call starts the input_fn again: its 4 steps use the first 4 batches.
    for step, (xb, yb) in enumerate(batches + batches[:4]):
        w -= 0.1 * 2 * xb.T @ (xb @ w - yb) / 8
        if step == 7:
            history["after8"] = w.ravel().copy()
    error = x @ w - y
    history["after12"] = w.ravel()
    history["loss"] = np.mean([np.mean(error[i : i + 8] ** 2) for i in range(0, 64, 8)])
    history["mae"] = np.mean(np.abs(error))
    history["predictions"] = (x @ w).ravel()
    return history


def test_estimator_train_evaluate_predict_matches_numpy(tmp_path, capsys) -> None:
    script = tmp_path / "estimator_example.py"
    script.write_text(SCRIPT)
    result = run_script(script, output=tmp_path / "reports", quiet=True)
    assert result.exit_code == 0
    # One device execution per iterations_per_loop steps: 2 + 1 (train), 2 (evaluate), 2
    # (predict, 8 batches), each simulated; ipusim run keeps one report per program (train,
    # evaluate, predict) with a row per execution.
    calls = [len(pd.read_csv(folder / "calls.csv")) for folder in result.reports]
    assert calls == [3, 2, 2]
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("RESULT"))
    got = json.loads(line.removeprefix("RESULT "))
    want = _reference()
    np.testing.assert_allclose(got["after8"], want["after8"], rtol=1e-5)
    np.testing.assert_allclose(got["after12"], want["after12"], rtol=1e-5)
    np.testing.assert_allclose(got["metrics"]["loss"], want["loss"], rtol=1e-5)
    np.testing.assert_allclose(got["metrics"]["mae"], want["mae"], rtol=1e-5)
    assert got["metrics"]["global_step"] == 12
    np.testing.assert_allclose(np.ravel(got["predictions"]), want["predictions"], rtol=1e-5)


def test_estimator_argument_checks() -> None:
    config = ipu.ipu_run_config.RunConfig(
        ipu_run_config=ipu.ipu_run_config.IPURunConfig(iterations_per_loop=4)
    )
    estimator = ipu.ipu_estimator.IPUEstimator(model_fn=lambda features: None, config=config)
    with pytest.raises(ValueError, match="multiple of iterations_per_loop"):
        estimator.train(input_fn=lambda: None, steps=6)
    with pytest.raises(NotImplementedError, match="hooks are not simulated"):
        estimator.train(input_fn=lambda: None, steps=4, hooks=[object()])
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        estimator.train(input_fn=lambda: None, steps=4, max_steps=8)
    with pytest.raises(ValueError, match="iterations_per_loop must be a positive int"):
        ipu.ipu_run_config.IPURunConfig(iterations_per_loop=0)
    with pytest.raises(NotImplementedError, match="host_call"):
        ipu.ipu_estimator.IPUEstimatorSpec("train", loss=1.0, train_op=1, host_call=(None, []))
    with pytest.raises(ValueError, match="Missing train_op"):
        ipu.ipu_estimator.IPUEstimatorSpec("train", loss=1.0)


PIPELINE_SCRIPT = textwrap.dedent(
    """
    import json

    import numpy as np
    import tensorflow.compat.v1 as tf
    from tensorflow.python import ipu
    from tensorflow.python.ipu.ops import pipelining_ops

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((64, 4)) * 0.5).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.0], [0.5], [2.0]], np.float32)).astype(np.float32)


    def input_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)


    def model_fn(mode, params):
        def stage1(features, labels):
            dense = tf.keras.layers.Dense(2, kernel_initializer="ones", use_bias=False)
            return dense(features), labels

        def stage2(hidden, labels):
            dense = tf.keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)
            return tf.reduce_mean(tf.square(dense(hidden) - labels))

        def optimizer_function(loss):
            optimizer = tf.train.GradientDescentOptimizer(params["learning_rate"])
            return pipelining_ops.OptimizerFunctionOutput(optimizer, loss)

        def eval_metrics_fn(loss):
            return {"loss": tf.metrics.mean(loss), "max_loss": np.max(loss)}

        return ipu.ipu_pipeline_estimator.IPUPipelineEstimatorSpec(
            mode,
            computational_stages=[stage1, stage2],
            gradient_accumulation_count=4,
            optimizer_function=optimizer_function,
            eval_metrics_fn=eval_metrics_fn,
        )


    ipu_options = ipu.config.IPUConfig()
    ipu_options.auto_select_ipus = 2
    config = ipu.ipu_run_config.RunConfig(
        ipu_run_config=ipu.ipu_run_config.IPURunConfig(
            iterations_per_loop=2, num_shards=2, ipu_options=ipu_options
        )
    )
    estimator = ipu.ipu_pipeline_estimator.IPUPipelineEstimator(
        model_fn=model_fn, config=config, params={"learning_rate": 0.01}
    )
    estimator.train(input_fn, steps=4)
    print("RESULT", json.dumps({
        "w1": estimator.get_variable_value("dense/kernel").tolist(),
        "w2": estimator.get_variable_value("dense_1/kernel").tolist(),
        "eval": estimator.evaluate(input_fn, steps=2),
    }))
    """
)


def test_pipeline_estimator_matches_numpy_accumulated_sgd(tmp_path, capsys) -> None:
    script = tmp_path / "pipeline_estimator_example.py"
    script.write_text(PIPELINE_SCRIPT)
    result = run_script(script, output=tmp_path / "reports", quiet=True)
    assert result.exit_code == 0
    # Two training executions (2 steps each) of one program, one evaluation.
    calls = [len(pd.read_csv(folder / "calls.csv")) for folder in result.reports]
    assert calls == [2, 1]
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("RESULT"))
    got = json.loads(line.removeprefix("RESULT "))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4)) * 0.5
    y = x @ np.array([[1.0], [-1.0], [0.5], [2.0]])
    w1, w2 = np.ones((4, 2)), np.ones((2, 1))
    batches = [(x[i : i + 4], y[i : i + 4]) for i in range(0, 64, 4)]
    for step in range(4):  # each step sums the gradients of 4 mini-batches (SUM reduction)
        g1, g2 = np.zeros_like(w1), np.zeros_like(w2)
        for xb, yb in batches[4 * step : 4 * step + 4]:
            hidden = xb @ w1
            d_pred = 2 * (hidden @ w2 - yb) / 4
            g2 += hidden.T @ d_pred
            g1 += xb.T @ (d_pred @ w2.T)
        w1, w2 = w1 - 0.01 * g1, w2 - 0.01 * g2
    np.testing.assert_allclose(got["w1"], w1, rtol=1e-5)
    np.testing.assert_allclose(got["w2"], w2, rtol=1e-5)
    losses = [np.mean((xb @ w1 @ w2 - yb) ** 2) for xb, yb in batches[:8]]
    np.testing.assert_allclose(got["eval"]["loss"], np.mean(losses), rtol=1e-5)
    np.testing.assert_allclose(got["eval"]["max_loss"], np.max(losses), rtol=1e-5)
    assert got["eval"]["global_step"] == 4


def test_replicated_estimator_averages_the_replicas_gradients() -> None:
    from ipusim.compat import tf

    v1 = tf.compat.v1
    x = np.arange(16, dtype=np.float32).reshape(8, 2) / 10
    y = np.ones((8, 1), np.float32)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(2, drop_remainder=True)

    def model_fn(features, labels, mode):
        dense = tf.keras.layers.Dense(1, kernel_initializer="zeros", use_bias=False)
        loss = tf.reduce_mean(tf.square(dense(features) - labels))
        optimizer = ipu.optimizers.CrossReplicaOptimizer(v1.train.GradientDescentOptimizer(0.5))
        return v1.estimator.EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(loss))

    options = ipu.config.IPUConfig()
    options.auto_select_ipus = 2
    run = ipu.ipu_run_config.IPURunConfig(
        iterations_per_loop=2, num_replicas=2, ipu_options=options
    )
    estimator = ipu.ipu_estimator.IPUEstimator(
        model_fn, config=ipu.ipu_run_config.RunConfig(ipu_run_config=run)
    )
    estimator.train(input_fn, steps=2)
    w = np.zeros((2, 1))
    batches = [(x[i : i + 2], y[i : i + 2]) for i in range(0, 8, 2)]
    for step in range(2):  # replica r of step s reads batch 2 s + r
        grads = [2 * xb.T @ (xb @ w - yb) / 2 for xb, yb in batches[2 * step : 2 * step + 2]]
        w = w - 0.5 * np.mean(grads, axis=0)
    np.testing.assert_allclose(estimator.get_variable_value("dense/kernel"), w, rtol=1e-5)
    wrong = ipu.ipu_run_config.RunConfig(
        ipu_run_config=ipu.ipu_run_config.IPURunConfig(num_replicas=4, ipu_options=options)
    )
    with pytest.raises(ValueError, match="auto_select_ipus = 4"):
        ipu.ipu_estimator.IPUEstimator(model_fn, config=wrong).train(input_fn, steps=2)
