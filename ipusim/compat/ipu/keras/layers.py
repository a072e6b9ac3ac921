"""``ipu.keras.layers``: the IPU's Keras layers as IPU TensorFlow 2.x had them here (graphcore/tensorflow
``python/ipu/keras/layers/__init__.py``: ``LSTM`` is ``PopnnLSTM`` and ``GRU`` is ``PopnnGRU``),
the same module as ``ipu_tensorflow_addons.keras.layers`` (:mod:`ipusim.compat.ipu_addons_layers`,
see :func:`ipusim.compat._alias.become`); every other name is :mod:`ipusim.keras.layers`' own."""

from ipusim.compat._alias import become

become(__name__, "ipusim.compat.ipu_addons_layers")
