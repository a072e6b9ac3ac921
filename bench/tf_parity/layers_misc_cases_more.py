"""Cases of generate_layers_misc.py, continued: preprocessing, lookups, hashing, locally
connected and convolutional recurrent layers, and activations at exact zeros (same keys as
layers_misc_cases.py)."""

from __future__ import annotations

B3 = (2, 4, 6)
IMG = (2, 5, 7, 3)

PREPROCESSING: list[dict] = [
    # ------------------------------------------------------------------ image preprocessing
    {
        "name": "resizing_down",
        "class": "Resizing",
        "config": {"height": 3, "width": 4},
        "inputs": [IMG],
    },
    {
        "name": "resizing_up",
        "class": "Resizing",
        "config": {"height": 8, "width": 11},
        "inputs": [IMG],
    },
    {
        "name": "resizing_nearest_down",
        "class": "Resizing",
        "config": {"height": 3, "width": 4, "interpolation": "nearest"},
        "inputs": [IMG],
    },
    {
        "name": "resizing_nearest_up",
        "class": "Resizing",
        "config": {"height": 9, "width": 10, "interpolation": "nearest"},
        "inputs": [IMG],
    },
    {
        "name": "resizing_crop_aspect",
        "class": "Resizing",
        "config": {"height": 4, "width": 4, "crop_to_aspect_ratio": True},
        "inputs": [IMG],
    },
    {
        "name": "resizing_single_image",
        "class": "Resizing",
        "config": {"height": 3, "width": 3},
        "inputs": [(5, 7, 3)],
    },
    {
        "name": "center_crop",
        "class": "CenterCrop",
        "config": {"height": 3, "width": 4},
        "inputs": [IMG],
    },
    {
        "name": "center_crop_upsize",
        "class": "CenterCrop",
        "config": {"height": 6, "width": 6},
        "inputs": [IMG],
    },
    {
        "name": "random_crop_infer",
        "class": "RandomCrop",
        "config": {"height": 4, "width": 4},
        "inputs": [IMG],
        "training": False,
    },
    {"name": "random_flip_infer", "class": "RandomFlip", "inputs": [IMG], "training": False},
    {
        "name": "random_contrast_infer",
        "class": "RandomContrast",
        "config": {"factor": 0.4},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_brightness_infer",
        "class": "RandomBrightness",
        "config": {"factor": 0.2},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_rotation_infer",
        "class": "RandomRotation",
        "config": {"factor": 0.2},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_translation_infer",
        "class": "RandomTranslation",
        "config": {"height_factor": 0.2, "width_factor": 0.1},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_zoom_infer",
        "class": "RandomZoom",
        "config": {"height_factor": 0.2},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_height_infer",
        "class": "RandomHeight",
        "config": {"factor": 0.2},
        "inputs": [IMG],
        "training": False,
    },
    {
        "name": "random_width_infer",
        "class": "RandomWidth",
        "config": {"factor": 0.2},
        "inputs": [IMG],
        "training": False,
    },
    # ------------------------------------------------------------------ categorical
    {
        "name": "category_one_hot",
        "class": "CategoryEncoding",
        "config": {"num_tokens": 6, "output_mode": "one_hot"},
        "inputs": [(5,)],
        "int_inputs": [0, 6],
    },
    {
        "name": "category_multi_hot",
        "class": "CategoryEncoding",
        "config": {"num_tokens": 6},
        "inputs": [(4, 3)],
        "int_inputs": [0, 6],
    },
    {
        "name": "category_count",
        "class": "CategoryEncoding",
        "config": {"num_tokens": 5, "output_mode": "count"},
        "inputs": [(4, 6)],
        "int_inputs": [0, 5],
    },
    {
        "name": "discretization_int",
        "class": "Discretization",
        "config": {"bin_boundaries": [-1.0, 0.0, 0.5, 1.0]},
        "inputs": [(4, 5)],
    },
    {
        "name": "discretization_one_hot",
        "class": "Discretization",
        "config": {"bin_boundaries": [-0.5, 0.5], "output_mode": "one_hot"},
        "inputs": [(6,)],
    },
    {
        "name": "integer_lookup",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4]},
        "inputs": [(3, 4)],
        "int_inputs": [0, 11],
    },
    {
        "name": "integer_lookup_mask",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4], "mask_token": 0},
        "inputs": [(3, 4)],
        "int_inputs": [0, 11],
    },
    {
        "name": "integer_lookup_invert",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4], "invert": True},
        "inputs": [(3, 4)],
        "int_inputs": [0, 6],
    },
    {
        "name": "integer_lookup_multi_hot",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4], "output_mode": "multi_hot"},
        "inputs": [(3, 4)],
        "int_inputs": [0, 11],
    },
]

PREPROCESSING += [
    {
        "name": "hashing",
        "class": "Hashing",
        "config": {"num_bins": 7},
        "inputs": [(4, 5)],
        "int_inputs": [-1000, 100000],
    },
    {
        "name": "hashing_mask",
        "class": "Hashing",
        "config": {"num_bins": 5, "mask_value": 0},
        "inputs": [(4, 5)],
        "int_inputs": [0, 4],
    },
    {
        "name": "hashing_multi_hot",
        "class": "Hashing",
        "config": {"num_bins": 6, "output_mode": "multi_hot"},
        "inputs": [(3, 4)],
        "int_inputs": [0, 1000],
    },
]

PREPROCESSING += [
    {
        "name": "locally_connected1d",
        "class": "LocallyConnected1D",
        "config": {"filters": 3, "kernel_size": 3},
        "inputs": [(2, 7, 4)],
    },
    {
        "name": "locally_connected1d_stride",
        "class": "LocallyConnected1D",
        "config": {"filters": 2, "kernel_size": 2, "strides": 3, "activation": "relu"},
        "inputs": [(2, 9, 3)],
    },
    {
        "name": "locally_connected2d",
        "class": "LocallyConnected2D",
        "config": {"filters": 3, "kernel_size": (2, 3)},
        "inputs": [(2, 5, 6, 2)],
    },
    {
        "name": "locally_connected2d_stride",
        "class": "LocallyConnected2D",
        "config": {"filters": 2, "kernel_size": 3, "strides": (2, 3), "use_bias": False},
        "inputs": [(2, 8, 9, 3)],
    },
]

# Exact zeros in the input: the gradients at 0 follow TensorFlow's kernels' conventions.
PREPROCESSING += [
    {"name": "leaky_relu_zeros", "class": "LeakyReLU", "inputs": [B3], "zero_steps": [1]},
    {
        "name": "leaky_relu_alpha_above_1",
        "class": "LeakyReLU",
        "config": {"alpha": 1.5},
        "inputs": [B3],
        "zero_steps": [2],
    },
    {"name": "elu_zeros", "class": "ELU", "inputs": [B3], "zero_steps": [1]},
    {
        "name": "elu_0.5_zeros",
        "class": "ELU",
        "config": {"alpha": 0.5},
        "inputs": [B3],
        "zero_steps": [1],
    },
    {"name": "prelu_zeros", "class": "PReLU", "inputs": [B3], "zero_steps": [0]},
    {
        "name": "thresholded_relu_zero_theta",
        "class": "ThresholdedReLU",
        "config": {"theta": 0.0},
        "inputs": [B3],
        "zero_steps": [3],
    },
]

PREPROCESSING += [
    {
        "name": "integer_lookup_3_oov",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4], "num_oov_indices": 3},
        "inputs": [(3, 5)],
        "int_inputs": [-6, 13],
    },
    {
        "name": "integer_lookup_no_oov",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1, 9, 4], "num_oov_indices": 0},
        "inputs": [(3, 4)],
        "int_inputs": [3, 5],
    },
    {
        "name": "integer_lookup_mask_count",
        "class": "IntegerLookup",
        "config": {"vocabulary": [3, 7, 1], "mask_token": 0, "output_mode": "count"},
        "inputs": [(3, 6)],
        "int_inputs": [0, 9],
    },
]

PREPROCESSING += [
    {
        "name": "conv_lstm2d",
        "class": "ConvLSTM2D",
        "config": {"filters": 2, "kernel_size": 3},
        "inputs": [(2, 3, 5, 6, 2)],
        "scale": 0.5,
    },
    {
        "name": "conv_lstm2d_same_seq_back",
        "class": "ConvLSTM2D",
        "config": {
            "filters": 3,
            "kernel_size": (2, 3),
            "padding": "same",
            "return_sequences": True,
            "go_backwards": True,
            "activation": "relu",
        },
        "inputs": [(2, 4, 4, 5, 2)],
        "scale": 0.5,
    },
    {
        "name": "conv_lstm2d_stride",
        "class": "ConvLSTM2D",
        "config": {
            "filters": 2,
            "kernel_size": 3,
            "strides": 2,
            "recurrent_activation": "sigmoid",
            "use_bias": False,
        },
        "inputs": [(2, 3, 7, 7, 1)],
        "scale": 0.5,
    },
    {
        "name": "conv_lstm1d",
        "class": "ConvLSTM1D",
        "config": {"filters": 3, "kernel_size": 2, "return_sequences": True},
        "inputs": [(2, 4, 6, 2)],
        "scale": 0.5,
    },
]

PREPROCESSING += [
    {
        "name": "conv_lstm3d",
        "class": "ConvLSTM3D",
        "config": {"filters": 2, "kernel_size": 2, "padding": "same", "return_sequences": True},
        "inputs": [(1, 3, 3, 4, 4, 2)],
        "scale": 0.5,
    },
    {
        "name": "conv_lstm3d_valid",
        "class": "ConvLSTM3D",
        "config": {"filters": 2, "kernel_size": (2, 2, 3)},
        "inputs": [(2, 2, 3, 3, 4, 1)],
        "scale": 0.5,
    },
]

PREPROCESSING += [
    {
        "name": "mha_rank4",
        "class": "MultiHeadAttention",
        "config": {"num_heads": 2, "key_dim": 3},
        "inputs": [(2, 3, 4, 6), (2, 2, 5, 6)],
        "call": "args",
    },
    {
        "name": "mha_rank4_axes_mask",
        "class": "MultiHeadAttention",
        "config": {"num_heads": 2, "key_dim": 2, "attention_axes": [1, 2]},
        "inputs": [(2, 2, 3, 4), (2, 3, 2, 4)],
        "call": "args",
        "bool_kwargs": {"attention_mask": [(2, 2, 3, 3, 2)]},
    },
]
