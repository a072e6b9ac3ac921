"""docs/api.md is what ipusim covers of the real TensorFlow / Keras API (issue 22, item 1).

The listings (``bench/api_coverage/tf_api.json`` from TensorFlow 2.x and tf-keras, and
``used_api.json`` from Graphcore's public IPU TensorFlow 2 programs) are resolved against
ipusim's compatibility namespaces as ``ipusim run`` sees them; the rendered page must equal the
committed docs/api.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.api_coverage import api_status, write_docs
from ipusim.compat.not_simulated import NOT_SIMULATED
from ipusim.compat.runner import redirect_imports

REPO = Path(__file__).resolve().parents[2]


def test_resolution_follows_what_ipusim_provides():
    with redirect_imports():
        assert api_status.classify("tensorflow.keras.layers.Dense") == (api_status.COVERED, "")
        assert api_status.classify("keras.layers.NoSuchLayer")[0] == api_status.MISSING
        assert api_status.classify("tensorflow.data.Dataset.from_tensor_slices")[0] == "covered"
        assert api_status.classify("tensorflow.python.ipu", module=True)[0] == "covered"
        assert api_status.classify("tensorflow.no_such_module", module=True)[0] == "missing"
        status, note = api_status.classify("tensorflow.distribute.MirroredStrategy")
    assert status == api_status.NOT_SIMULATED
    assert note.startswith(NOT_SIMULATED["tf.distribute.MirroredStrategy"][0])


def test_the_listings_hold_one_sorted_entry_per_name():
    names = json.loads(api_status.TF_API.read_text())["names"]
    keys = [(e["module"], e["name"]) for e in names]
    assert keys == sorted(set(keys)) and len(keys) > 1000
    used = json.loads(api_status.USED_API.read_text())
    assert len(used["programs"]) >= 41
    for entry in used["names"]:
        assert all(0 <= i < len(used["programs"]) for i in entry["used_by"])


def test_every_not_simulated_entry_names_a_reason_and_a_replacement():
    for name, (reason, instead) in NOT_SIMULATED.items():
        assert name.startswith("tf.") and reason and instead, name


def test_docs_api_md_is_up_to_date():
    fresh = write_docs.render()
    committed = (REPO / "docs" / "api.md").read_text()
    if fresh != committed:
        pytest.fail(
            "docs/api.md is out of date with ipusim's namespaces; regenerate it with "
            f"`{write_docs.COMMAND}` and commit it"
        )


def test_the_scanner_expands_import_aliases_into_full_names():
    from bench.api_coverage.scan import scan

    source = (
        "import tensorflow as tf\n"
        "from tensorflow.python import ipu\n"
        "from keras.optimizer_v2 import gradient_descent as gd\n"
        "import numpy as np\n"
        "def f(x):\n"
        "    ds = tf.data.Dataset.from_tensor_slices(x).batch(2)\n"
        "    cfg = ipu.config.IPUConfig()\n"
        "    return gd.SGD(0.1), np.zeros(3), tf.keras.layers.Dense(2)(x)\n"
    )
    names, modules = scan(source)
    assert names == {
        "tensorflow.data.Dataset.from_tensor_slices",
        "tensorflow.python.ipu",
        "tensorflow.python.ipu.config.IPUConfig",
        "keras.optimizer_v2.gradient_descent",
        "keras.optimizer_v2.gradient_descent.SGD",
        "tensorflow.keras.layers.Dense",
    }
    assert modules == {"tensorflow", "tensorflow.python", "keras.optimizer_v2"}


def test_names_ipu_tensorflow_lacks_are_told_apart_from_gaps():
    # AdamW came with Keras 2.11 and tf.random.split with TensorFlow 2.12, after IPU
    # TensorFlow's 2.6; tf.math.cos (a generated op), tf.keras.layers.LSTM and tf.losses
    # (an alias module) are in 2.6.
    in_ipu_tf = api_status.ipu_names()
    assert "tf.keras.optimizers.AdamW" not in in_ipu_tf and "tf.random.split" not in in_ipu_tf
    for name in ("tf.math.cos", "tf.broadcast_to", "tf.keras.layers.LSTM", "tf.losses"):
        assert name in in_ipu_tf, name
    statuses = {s.name: s for s in api_status.tf_api_statuses()}
    # A later name ipusim has anyway (AdamW) counts as covered; a later one it lacks gets the
    # reason; a 2.6 name never does.
    assert statuses["tf.keras.optimizers.AdamW"].status == api_status.COVERED
    later_gaps = [
        s
        for s in statuses.values()
        if s.name not in in_ipu_tf
        and s.status != api_status.COVERED
        and s.module not in api_status.UNCHECKED
    ]
    assert later_gaps
    assert all(s.note for s in later_gaps)
    assert statuses["tf.keras.layers.LSTM"].note != api_status.LATER


def test_arguments_ipusim_lacks_are_found_from_the_signatures():
    names = api_status.signature_names
    assert names("(a, b=(1, 2), c='x,y', *, d=[1, 2], name=None)") == ["a", "b", "c", "d", "name"]
    assert names("(x, /, y, *args)") == ["x", "y"] and names("(a, **kwargs)") is None

    def ours(a, b=1):
        return a

    def tolerant(a, **kwargs):
        return a

    assert api_status.missing_arguments(ours, "(a, b=1, name=None)") == ["name"]
    assert api_status.missing_arguments(ours, "(a, b=1, layout=None)", ["a", "b"]) == []
    assert api_status.missing_arguments(tolerant, "(a, b=1, name=None)") == []
