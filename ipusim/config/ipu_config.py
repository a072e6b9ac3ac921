"""``IPUConfig``: the root of the configuration tree (mirrors IPU TensorFlow 2, SDK 2.5)."""

from __future__ import annotations

from typing import Any

from ipusim.config._base import Category, Option, _ConfigBase, describe_fields
from ipusim.config._env import running_on_ipu_model
from ipusim.config.categories import (
    _ConvolutionConfig,
    _ExperimentalConfig,
    _FloatingPointBehaviourConfig,
    _IOTilesConfig,
    _IPUDeviceConnectionConfig,
    _IPUModelConfig,
    _MatmulConfig,
    _NormConfig,
    _OptimizationConfig,
    _PoolingConfig,
    _SchedulingConfig,
    _SliceConfig,
)
from ipusim.config.enums import SelectionOrder
from ipusim.config.ipusim_options import _IpusimConfig
from ipusim.errors import ConfigurationError

__all__ = ["IPUConfig"]

_IPU_LIST_TYPE = "typing.Union[int, typing.List[int], typing.Tuple[int, ...]]"
_IPU_LIST_HINT = " Pass an int or a list or tuple of ints, for example 2 or [2, 2]."


def _is_int_or_ints(value: Any) -> bool:
    if type(value) is int:
        return True
    return type(value) in (list, tuple) and all(type(e) is int for e in value)


class IPUConfig(_ConfigBase):
    """Configuration of the (simulated) IPU system, organised in categories.

    ``IPUConfig()`` takes no arguments. Options are set by attribute, for example
    ``cfg.auto_select_ipus = 4`` or ``cfg.io_tiles.num_io_tiles = 32``; every assignment is
    type checked strictly (``1`` is not accepted for a float option, nor ``0`` for a bool) and
    unknown names raise ``ValueError`` with a suggestion. Apply the configuration with
    :meth:`configure_ipu_system`.

    All categories except ``ipusim`` mirror IPU TensorFlow 2 (SDK 2.5). The ``ipusim``
    category holds the simulator's own settings (machine, host speed, numerics/timing) and is
    not part of IPU TensorFlow.

    There is no replication-factor option: a model with ``S`` shards on a device of ``N`` IPUs
    runs ``N / S`` replicas.
    """

    # Options assigned in _validate; the others are read through _ConfigBase.__getattr__.
    auto_select_ipus: int | list[int] | tuple[int, ...]
    select_ipus: int | list[int] | tuple[int, ...]

    _FIELDS = (
        Option(
            "allow_recompute",
            False,
            "Recompute activations in the backward pass instead of keeping them, trading "
            "compute for memory. Pipeline recomputation modes need it. Stateful operations "
            "are never recomputed.",
        ),
        Option(
            "selection_order",
            SelectionOrder.AUTO,
            "Order in which the IPUs of a multi-IPU device are mapped to shards; a SelectionOrder.",
        ),
        Option(
            "serialization_output_folder",
            "",
            "Folder where compiled executables are written; '' (the default) writes none.",
        ),
        Option("compilation_poplar_options", {}, "Poplar Engine compilation options (a dict)."),
        Option(
            "gcl_poplar_options",
            {},
            "Options (a dict) for the Graphcore Communication Library's collectives.",
        ),
        Option(
            "auto_select_ipus",
            [],
            "IPUs of each TensorFlow device: entry i is the IPU count of /device:IPU:i, picked "
            "automatically. 2 is one device of 2 IPUs; [2, 2] two devices of 2 IPUs each. "
            "ipusim simulates /device:IPU:0.",
            type_str=_IPU_LIST_TYPE,
            check=_is_int_or_ints,
            hint=_IPU_LIST_HINT,
        ),
        Option(
            "select_ipus",
            [],
            "Explicit device configurations, one index per TensorFlow device, as listed by "
            "`gc-info -l`: single IPUs first, then groups of 2, 4, 8, 16 IPUs (see "
            "ipusim.config.devices for ipusim's numbering). Only one of auto_select_ipus and "
            "select_ipus may be set.",
            type_str=_IPU_LIST_TYPE,
            check=_is_int_or_ints,
            hint=_IPU_LIST_HINT,
        ),
        Category("convolutions", _ConvolutionConfig, "Options that affect convolutions."),
        Category(
            "device_connection",
            _IPUDeviceConnectionConfig,
            "Options that control when to attach to the IPU devices.",
        ),
        Category("slices", _SliceConfig, "Options that affect slice operations."),
        Category(
            "experimental",
            _ExperimentalConfig,
            "Experimental options that may change or disappear without notice.",
        ),
        Category(
            "floating_point_behaviour",
            _FloatingPointBehaviourConfig,
            "Floating-point exceptions, stochastic rounding and overflow behaviour.",
        ),
        Category(
            "io_tiles", _IOTilesConfig, "Tiles reserved for I/O, taken from the compute tiles."
        ),
        Category(
            "ipu_model",
            _IPUModelConfig,
            "Options of the IPU Model; they take effect only when TF_POPLAR_FLAGS contains "
            "--use_ipu_model.",
        ),
        Category("matmuls", _MatmulConfig, "Options that affect matrix multiplications."),
        Category(
            "norms",
            _NormConfig,
            "Options applied to every normalisation (batch, group, layer, instance norm).",
        ),
        Category(
            "optimizations",
            _OptimizationConfig,
            "Optimisations applied while lowering the graph to the IPU.",
        ),
        Category("pooling", _PoolingConfig, "Options that affect pooling operations."),
        Category(
            "scheduling",
            _SchedulingConfig,
            "How operations are ordered when the graph is compiled.",
        ),
        Category(
            "ipusim",
            _IpusimConfig,
            "ipusim's own settings (not part of IPU TensorFlow): machine to simulate, host "
            "speed, numerics and timing switches, precision.",
        ),
    )

    def __init__(self) -> None:
        super().__init__()

    def _validate(self) -> None:
        """Configure-time checks of IPU TensorFlow, then each category's own.

        Normalises an int ``auto_select_ipus`` / ``select_ipus`` to a one-element list on this
        object, as IPU TensorFlow does.
        """
        if self.auto_select_ipus and self.select_ipus:
            raise ConfigurationError(
                f"Both auto_select_ipus ({self.auto_select_ipus!r}) and select_ipus "
                f"({self.select_ipus!r}) are set; choose the devices with only one of them and "
                "leave the other empty ([])."
            )
        # _is_int_or_ints admits exactly int, list or tuple (no bool), so isinstance is
        # type(...) is int here.
        if isinstance(self.auto_select_ipus, int):
            self.auto_select_ipus = [self.auto_select_ipus]
        if isinstance(self.select_ipus, int):
            self.select_ipus = [self.select_ipus]
        if len(set(self.select_ipus)) != len(self.select_ipus):
            dups = sorted({i for i in self.select_ipus if list(self.select_ipus).count(i) > 1})
            raise ConfigurationError(
                f"select_ipus = {self.select_ipus!r} names device configuration(s) {dups} more "
                "than once; each TensorFlow device needs its own configuration index."
            )
        if self.select_ipus and running_on_ipu_model():
            raise ConfigurationError(
                f"select_ipus = {self.select_ipus!r} cannot be used with the IPU Model "
                "(TF_POPLAR_FLAGS contains --use_ipu_model): it has no device listing. Give "
                "the IPU counts with auto_select_ipus instead."
            )
        group = self.norms.experimental.distributed_batch_norm_replica_group_size
        if self.io_tiles.num_io_tiles > 0 and group > 1:
            raise ConfigurationError(
                f"norms.experimental.distributed_batch_norm_replica_group_size = {group} is not "
                f"supported together with I/O tiles (io_tiles.num_io_tiles = "
                f"{self.io_tiles.num_io_tiles}). Set one of them back to its default (1 and 0)."
            )
        super()._validate()

    def configure_ipu_system(self, device: str = "cpu") -> None:
        """Configure the simulated IPU system with this config.

        Same as ``ipusim.config.configure_ipu_system(self, device)``.

        Args:
            device: The CPU device local to the IPUs (accepted for compatibility; unused).
        """
        from ipusim.config.configure import configure_ipu_system

        configure_ipu_system(self, device)


IPUConfig.__doc__ = (
    (IPUConfig.__doc__ or "")
    + "\n    Options:\n"
    + "\n".join("    " + line for line in describe_fields(IPUConfig))
)
