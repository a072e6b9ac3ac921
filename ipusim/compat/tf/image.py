"""``tf.image``: flips, crops, pads, resize, brightness / contrast and dtype conversion of NHWC
images from ipusim's custom-training-loop runtime (:mod:`ipusim.compat.runtime.ops_image`)."""

from ipusim.compat._alias import runtime_getattr

__getattr__ = runtime_getattr(__name__, ("ipusim.compat.runtime.ops_image",), ("resize",))
