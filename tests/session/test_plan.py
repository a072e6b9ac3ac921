"""The session's run plan: an IPUConfig and a system resolved once into typed figures, from
which the host's behaviour, its link and the lowering options are taken."""

from __future__ import annotations

import math

import pytest

import ipusim
from ipusim import session
from ipusim.cost.compute import PlannerOptions
from ipusim.hardware import load_system
from ipusim.lowering.distribution import DistributionSpec
from ipusim.session.plan import HostSettings, resolve_plan

_PS_PER_S = 10**12


def _config(place_ops_on_io_tiles: bool = True) -> ipusim.IPUConfig:
    cfg = ipusim.IPUConfig()
    cfg.io_tiles.num_io_tiles = 32
    cfg.io_tiles.place_ops_on_io_tiles = place_ops_on_io_tiles
    cfg.allow_recompute = True
    cfg.ipusim.precision = "fp16.16"
    cfg.ipusim.host_dataset_rate = 2000.0
    cfg.ipusim.host_overhead_s = 0.001
    cfg.ipusim.host_outfeed_drain_s = 2e-6
    cfg.ipusim.host_callback_s = 3e-6
    cfg.ipusim.engine = "simpy"
    cfg.ipusim.trace_records = 500
    cfg.norms.use_stable_statistics = True
    return cfg


def test_a_plan_holds_what_the_config_says() -> None:
    system = load_system("M2000")
    plan = resolve_plan(_config(), system)
    assert plan.system is system
    assert (plan.precision, plan.recompute, plan.io_tiles) == ("fp16.16", True, 32)
    assert plan.host == HostSettings(2000.0, 0.001, 2e-6, 3e-6, "")
    assert (plan.engine.engine, plan.engine.record_budget) == ("simpy", 500)
    spec = plan.distribution(DistributionSpec(replicas=2))
    assert (spec.replicas, spec.stable_norm_statistics) == (2, True)


def test_without_a_config_the_plan_is_ipu_tensorflow_s_defaults() -> None:
    system = load_system("M2000")
    plan = resolve_plan(None, system)
    assert (plan.precision, plan.recompute, plan.io_tiles, plan.processes) == ("fp32", False, 0, 1)
    assert plan.planner == PlannerOptions()
    spec = DistributionSpec(replicas=4)
    assert plan.distribution(spec) is spec
    options = plan.host_options(session.FeedOptions())
    # No configured host figures: unlimited input, the system's own per-execution overhead.
    assert options.sample_ps == 0
    assert options.per_execution_overhead_ps == round(
        system.host.per_execution_overhead_s * _PS_PER_S
    )
    assert (options.outfeed_drain_ps, options.callback_ps) == (0, 0)


def test_the_plan_s_host_options_follow_the_config_and_the_feeds() -> None:
    plan = resolve_plan(_config(), load_system("M2000"))
    options = plan.host_options(session.FeedOptions(), replicas=4)
    # One process feeds 4 replicas on one infeed thread at 2000 samples/s: 4 / 2000 s a sample.
    assert options.sample_ps == round(4 / 2000 * _PS_PER_S)
    assert options.per_execution_overhead_ps == round(0.001 * _PS_PER_S)
    assert options.outfeed_drain_ps == round(4 * 2e-6 * _PS_PER_S)  # one thread, 4 replicas
    assert options.callback_ps == round(3e-6 * _PS_PER_S)
    assert options.infeed == "overlapped"  # I/O tiles, a single IPU
    assert plan.host_options(session.FeedOptions(), "interleaved").infeed == "staged"
    direct = plan.host_options(session.FeedOptions(prefetch_depth=1), "interleaved")
    assert direct.infeed == "direct"
    assert plan.host_options(session.FeedOptions(callbacks=False)).callback_ps == 0
    idle = resolve_plan(_config(place_ops_on_io_tiles=False), load_system("M2000"))
    assert idle.host_options(session.FeedOptions()).infeed == "staged"  # reserved, no copies


def test_the_old_entry_points_resolve_the_same_plan() -> None:
    cfg, system = _config(), load_system("M2000")
    feeds = session.FeedOptions(prefetch_depth=2)
    plan = resolve_plan(cfg, system)
    assert session.host_options(cfg, system, feeds, "grouped", 2) == plan.host_options(
        feeds, "grouped", 2
    )
    assert session.host_link(system, None, cfg) == plan.host_link(None)
    link = plan.host_link(None)
    assert link.h2d_bytes_per_s == min(
        system.host.h2d_bandwidth_bytes_per_s, system.host.stream_bandwidth_bytes_per_s
    )


def test_an_unlimited_dataset_rate_costs_no_host_time() -> None:
    cfg = _config()
    cfg.ipusim.host_dataset_rate = math.inf
    plan = resolve_plan(cfg, load_system("M2000"))
    assert plan.input_seconds_per_sample(session.FeedOptions(), replicas=8) == 0.0


@pytest.mark.parametrize("replicas, processes, expected", [(8, 1, 8), (8, 2, 4), (7, 2, 4)])
def test_local_replicas_round_up_over_the_processes(
    replicas: int, processes: int, expected: int
) -> None:
    cfg = _config()
    cfg.experimental.multi_replica_distribution.process_count = processes
    cfg.experimental.multi_replica_distribution.process_index = 0
    plan = resolve_plan(cfg, load_system("POD16"))
    assert plan.local_replicas(replicas) == expected
