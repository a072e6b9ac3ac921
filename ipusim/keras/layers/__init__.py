"""Keras layers."""

from ipusim.keras.engine.input_layer import Input, InputLayer
from ipusim.keras.engine.input_spec import InputSpec
from ipusim.keras.engine.layer import Layer
from ipusim.keras.layers import experimental as experimental  # TF 2.6 import path
from ipusim.keras.layers.activation import ELU, LeakyReLU, PReLU, ThresholdedReLU
from ipusim.keras.layers.attention import AdditiveAttention, Attention
from ipusim.keras.layers.categorical import (
    CategoryEncoding,
    Discretization,
    Hashing,
    IntegerLookup,
)
from ipusim.keras.layers.conv import Conv2D, Convolution2D
from ipusim.keras.layers.conv_depthwise import (
    DepthwiseConv2D,
    SeparableConv2D,
    SeparableConvolution2D,
)
from ipusim.keras.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D
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
from ipusim.keras.layers.unsupported import (
    ConvLSTM3D,
    DenseFeatures,
    HashedCrossing,
    SpectralNormalization,
    StringLookup,
    TextVectorization,
)
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
    "CategoryEncoding",
    "CenterCrop",
    "Concatenate",
    "Conv2D",
    "ConvLSTM1D",
    "ConvLSTM2D",
    "ConvLSTM3D",
    "Convolution2D",
    "Dense",
    "DenseFeatures",
    "DepthwiseConv2D",
    "Discretization",
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
    "HashedCrossing",
    "Hashing",
    "Identity",
    "Input",
    "InputLayer",
    "InputSpec",
    "IntegerLookup",
    "Layer",
    "LayerNormalization",
    "LeakyReLU",
    "LocallyConnected1D",
    "LocallyConnected2D",
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
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomHeight",
    "RandomRotation",
    "RandomTranslation",
    "RandomWidth",
    "RandomZoom",
    "ReLU",
    "RecomputationCheckpoint",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "Resizing",
    "SeparableConv2D",
    "SeparableConvolution2D",
    "Softmax",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "SpectralNormalization",
    "StringLookup",
    "Subtract",
    "TextVectorization",
    "ThresholdedReLU",
    "TimeDistributed",
    "UnitNormalization",
    "Wrapper",
    "ZeroPadding2D",
]
