"""Variables: named, mutable arrays that graphs read (weights, optimizer slots, moving statistics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from ipusim.errors import ConfigurationError
from ipusim.graph.spec import Array, TensorSpec, canonical_dtype


class Variable:
    """A named array that persists across graph executions.

    Attributes:
        name: unique, path-like name, e.g. ``"dense/kernel:0"``.
        trainable: whether optimizers update it from gradients.
    """

    _is_ipusim_variable = True
    __slots__ = ("name", "trainable", "_value", "spec", "_initializer")

    def __init__(
        self, value: Array, name: str, trainable: bool = True, dtype: object | None = None
    ) -> None:
        array = np.asarray(value, dtype=None if dtype is None else canonical_dtype(dtype))
        self._value: Array | None = np.array(array, order="C", copy=True)
        self._initializer: Callable[[], Array] | None = None
        self.name = name
        self.trainable = bool(trainable)
        self.spec = TensorSpec(self._value.shape, self._value.dtype.name, name)

    @classmethod
    def lazy(
        cls,
        shape: tuple[int, ...],
        dtype: object,
        initializer: Callable[[], Array],
        name: str,
        trainable: bool = True,
    ) -> Variable:
        """A variable whose array is made by ``initializer()`` the first time it is needed.

        Timing-only runs of large models never touch the values, so they are never allocated.
        """
        variable = cls.__new__(cls)
        variable._value = None
        variable._initializer = initializer
        variable.name = name
        variable.trainable = bool(trainable)
        variable.spec = TensorSpec(tuple(int(d) for d in shape), canonical_dtype(dtype), name)
        return variable

    @property
    def value(self) -> Array:
        """The current array (shared, not copied: kernels update it in place)."""
        if self._value is None:
            initializer = cast(Callable[[], Array], self._initializer)  # set while _value is None
            array = np.asarray(initializer(), dtype=self.spec.dtype)
            if array.shape != self.spec.shape:
                raise ConfigurationError(
                    f"the initializer of {self.name!r} made an array of shape {array.shape}, "
                    f"expected {self.spec.shape}"
                )
            self._value = np.array(array, order="C", copy=True)
            self._initializer = None
        return self._value

    @property
    def materialized(self) -> bool:
        """Whether the array exists yet (lazy variables are made on first use)."""
        return self._value is not None

    @property
    def shape(self) -> tuple[int, ...]:
        return cast(tuple[int, ...], self.spec.shape)  # a variable's shape is always known

    @property
    def dtype(self) -> str:
        return self.spec.dtype

    def numpy(self) -> Array:
        """A copy of the current value."""
        return self.value.copy()

    def assign(self, value: object) -> None:
        """Replace the value; the shape must stay the same (dtype is converted)."""
        array = np.asarray(value)
        if array.shape != self.spec.shape:
            raise ConfigurationError(
                f"cannot assign a value of shape {array.shape} to variable {self.name!r} of "
                f"shape {self.spec.shape}"
            )
        if self._value is None:
            self._value = np.array(array, dtype=self.spec.dtype, order="C")
            self._initializer = None
        else:
            self._value[...] = array

    def __repr__(self) -> str:
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype}>"
