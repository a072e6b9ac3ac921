"""How many IPUs one replica of a program uses, and how many replicas a device holds.

This is IPU TensorFlow's rule (Keras extensions, TF 2.5; see the project's API reference §6.6),
and the one place ipusim states it: the Keras extensions, the custom-loop runtime and lowering
all call these functions.

- A program's **shard count** is ``max(device_mapping) + 1``: stage ``s`` runs on IPU
  ``device_mapping[s]`` of its replica, so a mapping that skips IPU indices (``[1, 1]``) still
  needs the IPUs below the highest one (IPU 0 then idles).
- One replica occupies the shard count **rounded up to a power of two** (a 3-stage pipeline
  uses 4 IPUs, the 4th idle): IPU devices come in powers of two.
- ``replication_factor = configured IPUs // IPUs per replica``, and the configured IPU count must
  be a multiple of the IPUs per replica.
"""

from __future__ import annotations

from collections.abc import Sequence

from ipusim.errors import PipelineConfigurationError


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``)."""
    return 1 << (max(int(n), 1) - 1).bit_length()


def shard_count(device_mapping: Sequence[int] | None) -> int:
    """IPUs a program's stages are mapped onto: ``max(device_mapping) + 1`` (1 when unpipelined).

    Args:
        device_mapping: the IPU index of each pipeline stage, or None / empty when the program
            is not pipelined.
    """
    if not device_mapping:
        return 1
    return max(int(d) for d in device_mapping) + 1


def ipus_per_replica(device_mapping: Sequence[int] | None) -> int:
    """IPUs one replica occupies: the shard count rounded up to a power of two."""
    return next_power_of_two(shard_count(device_mapping))


def replication_factor(
    num_ipus: int, device_mapping: Sequence[int] | None, what: str = "The model"
) -> int:
    """Replicas of a program with ``device_mapping`` on a device of ``num_ipus`` IPUs.

    Args:
        num_ipus: IPUs of the device (``IPUConfig.auto_select_ipus``).
        device_mapping: the IPU index of each pipeline stage (None: not pipelined).
        what: how the error message names the program (``"The model"``, ``"The pipeline"``).

    Returns:
        ``num_ipus // ipus_per_replica(device_mapping)``.

    Raises:
        PipelineConfigurationError: ``num_ipus`` is not a (non-zero) multiple of the IPUs one
            replica occupies.
    """
    per_replica = ipus_per_replica(device_mapping)
    if num_ipus >= per_replica and num_ipus % per_replica == 0:
        return num_ipus // per_replica
    shards = shard_count(device_mapping)
    rounded = (
        f"{per_replica} IPUs"
        if per_replica == shards
        else f"{per_replica} IPUs ({shards} rounded up to a power of two, as IPU TensorFlow does)"
    )
    raise PipelineConfigurationError(
        f"{what} maps its pipeline stages onto IPUs 0 to {shards - 1} (device_mapping "
        f"{list(device_mapping or [0])}), so each replica needs {rounded}, but the IPU system "
        f"has {num_ipus} IPU{'s' if num_ipus != 1 else ''}, which is not a multiple of "
        f"{per_replica}. Set IPUConfig.auto_select_ipus to a multiple of {per_replica}, or "
        "map the stages onto fewer IPUs with set_pipelining_options(device_mapping=...)."
    )


def check_system_fits(
    device_mapping: Sequence[int] | None, replicas: int, system_ipus: int
) -> None:
    """Check that ``replicas`` replicas of the program fit the simulated system's IPUs.

    Raises:
        PipelineConfigurationError: they need more IPUs than the system has.
    """
    per_replica = ipus_per_replica(device_mapping)
    needed = per_replica * max(int(replicas), 1)
    if needed > system_ipus:
        raise PipelineConfigurationError(
            f"{replicas} replica(s) of {per_replica} IPUs (device_mapping "
            f"{list(device_mapping or [0])}) need {needed} IPUs, but the simulated system has "
            f"{system_ipus}. Choose a larger system (IPUConfig.ipusim.system) or fewer IPUs "
            "(IPUConfig.auto_select_ipus)."
        )
