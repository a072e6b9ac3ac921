"""The op library. Importing this package registers every op."""

from ipusim.graph.ops import (  # noqa: F401
    augment,
    conv,
    conv3d,
    conv_grouped,
    image_resize,
    image_transform,
    linalg,
    lookup,
    math,
    nn,
    noise,
    norm,
    operators,
    pool3d,
    random,
    resize,
    rnn,
    shape,
    sources,
)
