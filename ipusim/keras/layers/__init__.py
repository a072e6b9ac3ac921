"""Keras layers."""

from ipusim.keras.engine.input_layer import Input, InputLayer
from ipusim.keras.engine.layer import Layer
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
from ipusim.keras.layers.lambda_layer import Lambda
from ipusim.keras.layers.merge import (
    Add,
    Average,
    Concatenate,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
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

__all__ = [
    "Activation",
    "Add",
    "Average",
    "AveragePooling2D",
    "AvgPool2D",
    "BatchNormalization",
    "Concatenate",
    "Conv2D",
    "Convolution2D",
    "Dense",
    "DepthwiseConv2D",
    "Dropout",
    "Embedding",
    "Flatten",
    "GlobalAveragePooling2D",
    "GlobalAvgPool2D",
    "GlobalMaxPool2D",
    "GlobalMaxPooling2D",
    "Input",
    "InputLayer",
    "Lambda",
    "Layer",
    "LayerNormalization",
    "MaxPool2D",
    "MaxPooling2D",
    "Maximum",
    "Minimum",
    "Multiply",
    "Normalization",
    "OpLambda",
    "RecomputationCheckpoint",
    "ReLU",
    "Rescaling",
    "Reshape",
    "SeparableConv2D",
    "SeparableConvolution2D",
    "Softmax",
    "Subtract",
    "ZeroPadding2D",
]
