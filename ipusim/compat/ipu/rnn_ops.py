"""``tensorflow.python.ipu.rnn_ops`` (older SDKs; ``ipu_tensorflow_addons.v1.layers`` since):
the TF1 Popnn layers, :mod:`ipusim.compat.tf.v1_rnn_ops`."""

from ipusim.compat.tf.v1_rnn_ops import LSTMStateTuple, PopnnGRU, PopnnLSTM

__all__ = ["LSTMStateTuple", "PopnnGRU", "PopnnLSTM"]
