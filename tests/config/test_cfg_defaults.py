"""Every IPUConfig attribute, its default and its type, against the reference (§1.2)."""

from __future__ import annotations

import pytest

from ipusim.config import (
    DeviceConnectionType,
    ExecutionProfileType,
    IPUConfig,
    MergeRemoteBuffersBehaviour,
    SchedulingAlgorithm,
    SelectionOrder,
    StochasticRoundingBehaviour,
)

# Written out by hand from the reference, section 1.2 (TF-2.5), plus the ipusim category.
IPU_TF_DEFAULTS = {
    "allow_recompute": False,
    "selection_order": SelectionOrder.AUTO,
    "serialization_output_folder": "",
    "compilation_poplar_options": {},
    "gcl_poplar_options": {},
    "auto_select_ipus": [],
    "select_ipus": [],
    "convolutions.poplar_options": {},
    "device_connection.type": DeviceConnectionType.ALWAYS,
    "device_connection.version": "",
    "device_connection.enable_remote_buffers": False,
    "slices.poplar_options": {},
    "experimental.always_rearrange_copies_on_the_host": False,
    "experimental.enable_remote_buffer_embedding": False,
    "experimental.enable_prng_stability": False,
    "experimental.multi_replica_distribution.process_index": 0,
    "experimental.multi_replica_distribution.process_count": 0,
    "floating_point_behaviour.inv": False,
    "floating_point_behaviour.div0": False,
    "floating_point_behaviour.oflo": False,
    "floating_point_behaviour.esr": StochasticRoundingBehaviour.OFF,
    "floating_point_behaviour.nanoo": False,
    "floating_point_behaviour.set_all": False,
    "io_tiles.num_io_tiles": 0,
    "io_tiles.place_ops_on_io_tiles": False,
    "io_tiles.available_memory_proportion": 0.9,
    "ipu_model.compile_ipu_code": True,
    "ipu_model.tiles_per_ipu": 0,
    "ipu_model.version": "ipu2",
    "matmuls.clear_pass_type": False,
    "matmuls.poplar_options": {},
    "norms.use_stable_statistics": False,
    "norms.experimental.distributed_batch_norm_replica_group_size": 1,
    "optimizations.math.fast": False,
    "optimizations.math.dot_strength": True,
    "optimizations.prefetch_data_streams": True,
    "optimizations.combine_embedding_lookups": False,
    "optimizations.combine_matmuls": False,
    "optimizations.enable_graph_outlining": True,
    "optimizations.merge_infeed_io_copies": True,
    "optimizations.maximum_cross_replica_sum_buffer_size": 0,
    "optimizations.maximum_reduce_scatter_buffer_size": 0,
    "optimizations.maximum_inter_ipu_copies_buffer_size": 0,
    "optimizations.maximum_send_recv_cluster_size": 0,
    "optimizations.maximum_reduce_many_buffer_size": 0,
    "optimizations.maximum_all_gather_buffer_size": 0,
    "optimizations.minimum_remote_tensor_size": 128,
    "optimizations.merge_remote_buffers": MergeRemoteBuffersBehaviour.IF_BENEFICIAL,
    "optimizations.enable_gather_simplifier": True,
    "optimizations.triangular_solve_expander_block_size": 0,
    "optimizations.cholesky_block_size": 0,
    "optimizations.enable_fast_math": False,
    "optimizations.enable_dynamic_slice_replacement": True,
    "pooling.poplar_options": {},
    "scheduling.algorithm": SchedulingAlgorithm.CHOOSE_BEST,
    "scheduling.maximum_scheduler_lookahead_depth": 5,
    "scheduling.maximum_scheduler_search_space_size": 64,
}

IPUSIM_DEFAULTS = {
    "ipusim.system": "",
    "ipusim.host": "",
    "ipusim.host_dataset_rate": 0.0,
    "ipusim.host_overhead_s": -1.0,
    "ipusim.host_outfeed_drain_s": 0.0,
    "ipusim.host_callback_s": 0.0,
    "ipusim.numerics": True,
    "ipusim.precision": "fp32",
    "ipusim.timing": True,
    "ipusim.engine": "auto",
    "ipusim.trace_detail": "auto",
    "ipusim.trace_records": 1_000_000,
}

ALL_DEFAULTS = {**IPU_TF_DEFAULTS, **IPUSIM_DEFAULTS}

CATEGORIES = [
    "convolutions",
    "device_connection",
    "slices",
    "experimental",
    "experimental.multi_replica_distribution",
    "floating_point_behaviour",
    "io_tiles",
    "ipu_model",
    "matmuls",
    "norms",
    "norms.experimental",
    "optimizations",
    "optimizations.math",
    "pooling",
    "scheduling",
    "ipusim",
]


def _get(cfg: IPUConfig, dotted: str):
    node = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def test_attribute_set_is_exactly_the_reference_plus_ipusim():
    assert set(IPUConfig().to_dict()) == set(ALL_DEFAULTS)


def test_top_level_order_follows_ipu_tensorflow():
    keys = list(IPUConfig().to_dict())
    assert keys[:7] == [
        "allow_recompute",
        "selection_order",
        "serialization_output_folder",
        "compilation_poplar_options",
        "gcl_poplar_options",
        "auto_select_ipus",
        "select_ipus",
    ]
    assert keys[-len(IPUSIM_DEFAULTS) :] == list(IPUSIM_DEFAULTS)


@pytest.mark.parametrize("name", sorted(ALL_DEFAULTS))
def test_default_value_and_exact_type(name):
    value = _get(IPUConfig(), name)
    expected = ALL_DEFAULTS[name]
    assert value == expected
    assert type(value) is type(expected)  # 0.9 is a float, 0 an int, False a bool


@pytest.mark.parametrize("name", sorted(ALL_DEFAULTS))
def test_metadata_default_matches(name):
    meta = IPUConfig().get_attribute_metadata(name)
    assert meta.name == name
    assert meta.default == ALL_DEFAULTS[name]
    assert meta.__doc__.strip()  # every attribute documents its meaning


@pytest.mark.parametrize("name", CATEGORIES)
def test_categories_have_no_type_or_default(name):
    meta = IPUConfig().get_attribute_metadata(name)
    assert meta.type is None
    assert meta.default is None
    assert meta.__doc__.strip()


def test_mutable_defaults_are_not_shared_between_instances():
    a, b = IPUConfig(), IPUConfig()
    a.matmuls.poplar_options["availableMemoryProportion"] = "0.2"
    a.auto_select_ipus.append(2)
    assert b.matmuls.poplar_options == {}
    assert b.auto_select_ipus == []
    assert IPUConfig().get_attribute_metadata("matmuls.poplar_options").default == {}


def test_ipuconfig_takes_no_arguments():
    with pytest.raises(TypeError):
        IPUConfig(1)  # type: ignore[call-arg]


def test_enum_members_match_reference():
    assert [m.name for m in SelectionOrder] == ["AUTO", "ZIGZAG", "SNAKE", "HOOF"]
    assert {m.name for m in DeviceConnectionType} == {"ALWAYS", "ON_DEMAND", "PRE_COMPILE", "NEVER"}
    assert [m.name for m in MergeRemoteBuffersBehaviour] == ["NO_MERGING", "MERGE", "IF_BENEFICIAL"]
    assert [m.name for m in SchedulingAlgorithm] == [
        "CHOOSE_BEST",
        "CLUSTERING",
        "POST_ORDER",
        "LOOK_AHEAD",
        "SHORTEST_PATH",
    ]
    assert [m.name for m in ExecutionProfileType] == [
        "NO_PROFILE",
        "DEVICE_PROFILE",
        "IPU_PROFILE",
        "TILE_PROFILE",
    ]
    assert [m.name for m in StochasticRoundingBehaviour] == ["OFF", "ON", "REPLICA_IDENTICAL_ONLY"]


def test_stochastic_rounding_from_bool():
    assert StochasticRoundingBehaviour.from_bool(True) is StochasticRoundingBehaviour.ON
    assert StochasticRoundingBehaviour.from_bool(False) is StochasticRoundingBehaviour.OFF


def test_class_docstring_lists_every_option():
    doc = IPUConfig.__doc__
    for name in ALL_DEFAULTS:
        assert f"    {name} (" in doc, name
