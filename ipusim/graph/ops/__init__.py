"""The op library. Importing this package registers every op."""

from ipusim.graph.ops import (  # noqa: F401
    conv,
    conv3d,
    conv_grouped,
    linalg,
    math,
    math_extra,
    nn,
    norm,
    pool3d,
    random,
    random_draws,
    resize,
    scan,
    shape,
    sources,
)
