"""Property: an exported model serves what the model predicts, at every trace detail (issue 24).

For every drawn model (the round-trip models of ``tests/keras/round_trip_models.py``: Sequential,
functional, subclassed; Embedding ids above 2048, Dense, BatchNormalization; mixed_float16; fp32 /
fp16 precision), every ``trace_detail`` with a large or a tiny ``trace_records``, and an on-device
loop of 1-3 requests: ``export_for_ipu_serving``, ``serving.load``, serve every request, and

- each request's outputs are exactly ``model.predict``'s for those samples (given in the
  export's input dtype), from the export returned and from the one loaded;
- the loaded export has the same timing as the exported one: one latency per request, each
  positive and within the simulated execution; its trace keeps every record of that execution.

CI runs ``IPUSIM_ROUNDTRIP_EXAMPLES`` (default 200) derandomized examples.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ipusim
from ipusim import keras, serving
from ipusim.config import reset_ipu_configuration
from ipusim.config.ipusim_options import TRACE_DETAILS
from tests.keras.round_trip_models import Case, build_model, cases, data

EXAMPLES = int(os.environ.get("IPUSIM_ROUNDTRIP_EXAMPLES", "200"))


@pytest.fixture(autouse=True, scope="module")
def _restore_policy():
    yield
    keras.mixed_precision.set_global_policy(None)
    reset_ipu_configuration()


def _configure(c: Case, detail: str, records: int) -> None:
    reset_ipu_configuration()
    cfg = ipusim.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.ipusim.precision = c.precision
    cfg.ipusim.trace_detail = detail
    cfg.ipusim.trace_records = records
    cfg.configure_ipu_system()
    keras.mixed_precision.set_global_policy("mixed_float16" if c.mixed else None)


def _serve(served: serving.ServedModel, x: np.ndarray, batch: int) -> np.ndarray:
    return np.concatenate([served(x[i : i + batch]) for i in range(0, len(x), batch)])


def export_round_trip(c: Case, detail: str, records: int, iterations: int, folder) -> None:
    _configure(c, detail, records)
    keras.utils.set_random_seed(5)
    with ipusim.IPUStrategy().scope():
        model = build_model(c)
        model.compile(steps_per_execution=iterations)
    x, _ = data(c, samples=c.batch * iterations, seed=1)
    shutil.rmtree(folder, ignore_errors=True)
    exported = model.export_for_ipu_serving(str(folder), batch_size=c.batch)
    loaded = serving.load(folder)
    # The export's signature is the model's input: a Sequential built from a shape takes
    # float32 (as in Keras), which carries Embedding ids; predict is given the same values.
    x = x.astype(exported.input_specs[0].dtype)
    expected = model.predict(x, batch_size=c.batch)
    for served in (exported, loaded):
        assert (served.batch_size, served.iterations) == (c.batch, iterations)
        np.testing.assert_array_equal(_serve(served, x, c.batch), expected)
    timing = loaded.timing
    assert timing == exported.timing
    assert len(timing.request_latency_s) == iterations
    assert all(0 < t <= timing.execution_s for t in timing.request_latency_s)
    assert loaded.trace.detail.level == "full" and loaded.trace.detail.complete


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    c=cases(),
    detail=st.sampled_from(TRACE_DETAILS),
    records=st.sampled_from([1, 10, 1_000_000]),
    iterations=st.integers(1, 3),
)
def test_an_export_serves_what_the_model_predicts_at_every_trace_detail(
    c: Case, detail: str, records: int, iterations: int, tmp_path
) -> None:
    try:
        export_round_trip(c, detail, records, iterations, tmp_path / "export")
    except Exception as error:  # show the drawn case with the failure
        raise AssertionError(
            f"{type(error).__name__}: {error}\n{asdict(c)} {detail} {records} {iterations}"
        ) from error
