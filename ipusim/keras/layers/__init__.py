"""Keras layers."""

# ruff: noqa: F401  (re-exports: __all__ lists them all, computed below)
import types

from ipusim.keras.engine.input_layer import Input, InputLayer
from ipusim.keras.engine.input_spec import InputSpec
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers import experimental as experimental  # TF 2.6 import path
from ipusim.keras.layers.activation import ELU, LeakyReLU, PReLU, ThresholdedReLU
from ipusim.keras.layers.attention import AdditiveAttention, Attention
from ipusim.keras.layers.bidirectional import Bidirectional
from ipusim.keras.layers.categorical import (
    CategoryEncoding,
    Discretization,
    Hashing,
    IntegerLookup,
)
from ipusim.keras.layers.conv import Conv2D, Convolution2D
from ipusim.keras.layers.conv1d import (
    Conv1D,
    Convolution1D,
    DepthwiseConv1D,
    SeparableConv1D,
    SeparableConvolution1D,
)
from ipusim.keras.layers.conv3d import (
    Conv3D,
    Conv3DTranspose,
    Convolution3D,
    Convolution3DTranspose,
)
from ipusim.keras.layers.conv_depthwise import (
    DepthwiseConv2D,
    SeparableConv2D,
    SeparableConvolution2D,
)
from ipusim.keras.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from ipusim.keras.layers.conv_transpose import (
    Conv1DTranspose,
    Conv2DTranspose,
    Convolution1DTranspose,
    Convolution2DTranspose,
)
from ipusim.keras.layers.core import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    OpLambda,
    RecomputationCheckpoint,
    ReLU,
    Reshape,
    Softmax,
)
from ipusim.keras.layers.core_extra import (
    ActivityRegularization,
    Identity,
    Masking,
    UnitNormalization,
)
from ipusim.keras.layers.einsum_dense import EinsumDense
from ipusim.keras.layers.functions import (
    add,
    average,
    concatenate,
    deserialize,
    dot,
    maximum,
    minimum,
    multiply,
    serialize,
    subtract,
)
from ipusim.keras.layers.group_normalization import GroupNormalization
from ipusim.keras.layers.image_affine import RandomRotation, RandomTranslation, RandomZoom
from ipusim.keras.layers.image_preprocessing import (
    CenterCrop,
    RandomBrightness,
    RandomContrast,
    RandomCrop,
    RandomFlip,
    RandomHeight,
    RandomWidth,
    Resizing,
)
from ipusim.keras.layers.lambda_layer import Lambda
from ipusim.keras.layers.locally_connected import LocallyConnected1D, LocallyConnected2D
from ipusim.keras.layers.merge import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
)
from ipusim.keras.layers.merge_dot import Dot
from ipusim.keras.layers.multi_head_attention import MultiHeadAttention
from ipusim.keras.layers.noise import (
    AlphaDropout,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from ipusim.keras.layers.normalization import BatchNormalization, LayerNormalization
from ipusim.keras.layers.pooling import (
    AveragePooling2D,
    AvgPool2D,
    GlobalAveragePooling2D,
    GlobalAvgPool2D,
    GlobalMaxPool2D,
    GlobalMaxPooling2D,
    MaxPool2D,
    MaxPooling2D,
)
from ipusim.keras.layers.pooling_nd import (
    AveragePooling1D,
    AveragePooling3D,
    AvgPool1D,
    AvgPool3D,
    GlobalAveragePooling1D,
    GlobalAveragePooling3D,
    GlobalAvgPool1D,
    GlobalAvgPool3D,
    GlobalMaxPool1D,
    GlobalMaxPool3D,
    GlobalMaxPooling1D,
    GlobalMaxPooling3D,
    MaxPool1D,
    MaxPool3D,
    MaxPooling1D,
    MaxPooling3D,
)
from ipusim.keras.layers.popnn import PopnnGRU, PopnnLSTM
from ipusim.keras.layers.preprocessing import Normalization, Rescaling
from ipusim.keras.layers.recurrent import GRU, LSTM, SimpleRNN
from ipusim.keras.layers.recurrent_cells import (
    RNN,
    AbstractRNNCell,
    GRUCell,
    LSTMCell,
    SimpleRNNCell,
    StackedRNNCells,
)
from ipusim.keras.layers.reshaping_nd import (
    Cropping1D,
    Cropping2D,
    Cropping3D,
    Permute,
    RepeatVector,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding2D,
    ZeroPadding3D,
)
from ipusim.keras.layers.text import StringLookup, TextVectorization
from ipusim.keras.layers.wrappers import TimeDistributed, Wrapper

#: Every class and function imported above, sorted (not the submodules the imports bind).
__all__ = sorted(
    name
    for name, value in globals().items()
    if not name.startswith("_") and not isinstance(value, types.ModuleType)
)
