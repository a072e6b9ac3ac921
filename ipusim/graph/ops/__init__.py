"""The op library. Importing this package registers every op."""

from ipusim.graph.ops import (  # noqa: F401
    conv,
    conv3d,
    conv_grouped,
    linalg,
    math,
    nn,
    norm,
    operators,
    pool3d,
    random,
    resize,
    rnn,
    shape,
    sources,
)
