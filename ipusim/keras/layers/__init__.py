"""Keras layers."""

from ipusim.keras.engine.input_layer import Input, InputLayer
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers.activation import ELU, LeakyReLU, PReLU, ThresholdedReLU
from ipusim.keras.layers.attention import AdditiveAttention, Attention
from ipusim.keras.layers.conv import Conv2D, Convolution2D
from ipusim.keras.layers.conv_depthwise import (
    DepthwiseConv2D,
    SeparableConv2D,
    SeparableConvolution2D,
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
    Permute,
    RepeatVector,
    UnitNormalization,
)
from ipusim.keras.layers.dot import Dot
from ipusim.keras.layers.einsum_dense import EinsumDense
from ipusim.keras.layers.group_normalization import GroupNormalization
from ipusim.keras.layers.merge import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
)
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
from ipusim.keras.layers.preprocessing import Normalization, Rescaling
from ipusim.keras.layers.reshaping import ZeroPadding2D
from ipusim.keras.layers.wrappers import TimeDistributed, Wrapper

__all__ = [
    "Activation",
    "ActivityRegularization",
    "Add",
    "AdditiveAttention",
    "AlphaDropout",
    "Attention",
    "Average",
    "AveragePooling2D",
    "AvgPool2D",
    "BatchNormalization",
    "Concatenate",
    "Conv2D",
    "Convolution2D",
    "Dense",
    "DepthwiseConv2D",
    "Dot",
    "Dropout",
    "ELU",
    "EinsumDense",
    "Embedding",
    "Flatten",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling2D",
    "GlobalAvgPool2D",
    "GlobalMaxPool2D",
    "GlobalMaxPooling2D",
    "GroupNormalization",
    "Identity",
    "Input",
    "InputLayer",
    "Layer",
    "LayerNormalization",
    "LeakyReLU",
    "Masking",
    "MaxPool2D",
    "MaxPooling2D",
    "Maximum",
    "Minimum",
    "MultiHeadAttention",
    "Multiply",
    "Normalization",
    "OpLambda",
    "PReLU",
    "Permute",
    "ReLU",
    "RecomputationCheckpoint",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "SeparableConv2D",
    "SeparableConvolution2D",
    "Softmax",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "Subtract",
    "ThresholdedReLU",
    "TimeDistributed",
    "UnitNormalization",
    "Wrapper",
    "ZeroPadding2D",
]
