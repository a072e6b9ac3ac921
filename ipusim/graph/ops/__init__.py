"""The op library. Importing this package registers every op."""

from ipusim.graph.ops import (  # noqa: F401
    conv,
    conv_grouped,
    linalg,
    math,
    nn,
    noise,
    norm,
    random,
    shape,
    sources,
)
