"""Dtype policies: a layer's compute dtype and variable dtype (``tf.keras.mixed_precision``).

As in tf.keras 2.4+ (IPU TensorFlow's Keras): a policy named after a float dtype computes and
keeps its variables in that dtype; ``"mixed_float16"`` computes in float16 and keeps float32
variables, which layers read through a cast. Layers take ``dtype=`` a dtype name, a policy name
or a :class:`Policy`; without one they use :func:`global_policy`, which is ``floatx()`` until
:func:`set_global_policy` changes it. ``"mixed_bfloat16"`` is refused: the IPU has no bfloat16.
"""

from __future__ import annotations

from typing import Any

from ipusim.errors import ConfigurationError, InvalidTypeError
from ipusim.graph.spec import FLOAT_DTYPES, canonical_dtype
from ipusim.keras import backend

_MIXED = {"mixed_float16": ("float16", "float32")}
_global_policy: Policy | None = None


class Policy:
    """A dtype policy for a layer.

    Args:
        name: a dtype name (``"float32"``, ``"float16"``, ...) or ``"mixed_float16"``.

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is neither a dtype nor a mixed policy ipusim supports.
    """

    def __init__(self, name: str) -> None:
        if isinstance(name, Policy):
            name = name.name
        if not isinstance(name, str):
            raise InvalidTypeError(f'"name" must be a string, but got: {name!r}')
        if name in _MIXED:
            self._compute_dtype, self._variable_dtype = _MIXED[name]
        elif name == "mixed_bfloat16":
            raise ConfigurationError(
                'Policy "mixed_bfloat16" is not supported: the IPU computes in float16 or '
                'float32, not bfloat16. Use "mixed_float16" or "float16".'
            )
        else:
            try:
                dtype = canonical_dtype(name)
            except TypeError:
                raise ConfigurationError(
                    f"Cannot convert {name!r} to a mixed precision Policy. Valid policies are "
                    '"mixed_float16" and the name of a dtype such as "float32" or "float16".'
                ) from None
            self._compute_dtype = self._variable_dtype = dtype
        self._name = name

    @property
    def name(self) -> str:
        """The policy's name."""
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype layers compute in."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype of layers' variables."""
        return self._variable_dtype

    @property
    def is_mixed(self) -> bool:
        """Whether variables and computation differ in dtype (variables are read through a cast)."""
        return self._compute_dtype != self._variable_dtype

    def get_config(self) -> dict[str, Any]:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Policy:
        return cls(**config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Policy", self._name))

    def __repr__(self) -> str:
        return f'<Policy "{self._name}">'


def global_policy() -> Policy:
    """The policy layers use when constructed without ``dtype``: the one set by
    :func:`set_global_policy`, else ``Policy(keras.backend.floatx())``."""
    return _global_policy if _global_policy is not None else Policy(backend.floatx())


def set_global_policy(policy: Policy | str | None) -> None:
    """Set the policy of layers constructed from now on (None: back to ``floatx()``).

    Raises:
        ValueError: a policy whose compute dtype is not a float type.
        TypeError: ``policy`` is not a Policy, a string or None.
    """
    global _global_policy
    if policy is None:
        _global_policy = None
        return
    if isinstance(policy, str):
        policy = Policy(policy)
    if not isinstance(policy, Policy):
        raise InvalidTypeError(
            f"set_global_policy expects a Policy, a policy name or None, received {policy!r}"
        )
    if policy.compute_dtype not in FLOAT_DTYPES:
        raise ConfigurationError(
            'set_global_policy can only set floating-point policies such as "float32" and '
            f'"mixed_float16", but got policy: {policy.name}'
        )
    _global_policy = policy


def get(dtype: Any) -> Policy:
    """The policy for a layer's ``dtype`` argument: None (the global policy), a Policy, a policy
    or dtype name, a dtype object, or a serialised ``{"class_name": "Policy", "config": ...}``."""
    if dtype is None:
        return global_policy()
    if isinstance(dtype, Policy):
        return dtype
    if isinstance(dtype, dict):
        if dtype.get("class_name") != "Policy":
            raise ConfigurationError(f"cannot interpret {dtype!r} as a dtype policy")
        return Policy.from_config(dict(dtype.get("config") or {}))
    if isinstance(dtype, str):
        return Policy(dtype)
    return Policy(canonical_dtype(dtype))


def serialize(policy: Policy) -> str | dict[str, Any]:
    """A policy as a layer config stores it: the dtype name for a plain-dtype policy, else a
    ``{"class_name": "Policy", "config": {"name": ...}}`` dict (as tf.keras)."""
    if not policy.is_mixed and policy.name == policy.compute_dtype:
        return policy.name
    return {"class_name": "Policy", "config": policy.get_config()}
