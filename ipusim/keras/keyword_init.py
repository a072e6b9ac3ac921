"""Constructors from a table, for Keras classes that differ only in their arguments.

Many Keras loss and metric classes are a function plus fixed keyword arguments: their
constructors differ only in the names, order and defaults of the arguments. :func:`keyword_init`
builds such an ``__init__`` from a ``(name, default)`` table, with the real signature (so
positional calls, ``inspect.signature`` and the API-coverage check see Keras' arguments).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ipusim.errors import InvalidTypeError

#: Default of a parameter that has none (a required argument).
REQUIRED: Any = inspect.Parameter.empty

_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def keyword_init(
    parameters: Sequence[tuple[str, Any]], build: Callable[..., None]
) -> Callable[..., None]:
    """An ``__init__(self, <parameters>)`` that calls ``build(self, **arguments)``.

    Args:
        parameters: ``(name, default)`` in the signature's order (``REQUIRED``: no default);
            each may be passed by position or by keyword.
        build: receives the instance and every argument by name, defaults filled in, in the
            order of ``parameters``.

    Returns:
        The ``__init__`` function, its ``__signature__`` set to ``(self, <parameters>)``.
    """
    signature = inspect.Signature(
        [inspect.Parameter("self", _POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, _POSITIONAL_OR_KEYWORD, default=d) for n, d in parameters]
    )

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as error:  # worded as Python's: "Huber.__init__() got an unexpected..."
            raise InvalidTypeError(
                f"{type(self).__name__}.__init__() {error}; its arguments: {signature}"
            ) from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        build(self, **arguments)

    __init__.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect
    return __init__


def table_class(
    name: str, base: type, module: str, doc: str, init: Callable[..., None], **attributes: Any
) -> type[Any]:
    """A subclass ``name`` of ``base`` whose ``__init__`` is ``init`` (see :func:`keyword_init`)
    and with the class ``attributes``, defined as if in ``module`` (as ``repr``, serialization
    and the API docs name it)."""
    namespace = {"__init__": init, "__doc__": doc, "__module__": module, "__qualname__": name}
    return type(name, (base,), {**namespace, **attributes})


def fields(owner: Any, names: str) -> dict[str, Any]:
    """``owner``'s attributes ``names`` (separated by spaces) by name, in that order, as they
    are: the plain entries of a ``get_config``."""
    return {name: getattr(owner, name) for name in names.split()}
