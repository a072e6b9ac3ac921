"""The op library. Importing this package registers every op."""

from ipusim.graph.ops import (  # noqa: F401
    augment,
    conv,
    conv_grouped,
    linalg,
    lookup,
    math,
    nn,
    noise,
    norm,
    random,
    shape,
    sources,
)
