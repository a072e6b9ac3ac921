"""The cases of generate_layers_misc.py: plain data (class, config, input shapes, how to call).

Keys: ``name``, ``class``, ``config``, ``inputs`` (shapes), ``call`` ("single" default, "list":
one list argument, "args": positional arguments), ``kwargs`` (plain call arguments),
``bool_kwargs`` (name -> shapes of random boolean tensors; ``bool_list`` passes them as one
list), ``training`` (default True), ``wrap`` (the layer a wrapper wraps), ``zero_steps`` (time
steps of input 0 set to 0), ``int_inputs`` ([low, high) of integer inputs), ``scale``.
"""

from __future__ import annotations

B3 = (2, 4, 6)

CASES: list[dict] = [
    # ------------------------------------------------------------------ activations
    {"name": "leaky_relu", "class": "LeakyReLU", "inputs": [(4, 6)]},
    {"name": "leaky_relu_0.1", "class": "LeakyReLU", "config": {"alpha": 0.1}, "inputs": [B3]},
    {"name": "elu", "class": "ELU", "inputs": [(4, 6)]},
    {"name": "elu_0.5", "class": "ELU", "config": {"alpha": 0.5}, "inputs": [B3]},
    {"name": "thresholded_relu", "class": "ThresholdedReLU", "inputs": [(4, 6)]},
    {
        "name": "thresholded_relu_0.3",
        "class": "ThresholdedReLU",
        "config": {"theta": 0.3},
        "inputs": [(4, 6)],
    },
    {"name": "prelu", "class": "PReLU", "inputs": [(2, 3, 4)]},
    {
        "name": "prelu_shared",
        "class": "PReLU",
        "config": {"shared_axes": [1, 2]},
        "inputs": [(2, 3, 4, 5)],
    },
    # ------------------------------------------------------------------ noise at inference
    {
        "name": "gaussian_noise_infer",
        "class": "GaussianNoise",
        "config": {"stddev": 0.3},
        "inputs": [(4, 6)],
        "training": False,
    },
    {
        "name": "gaussian_dropout_infer",
        "class": "GaussianDropout",
        "config": {"rate": 0.3},
        "inputs": [(4, 6)],
        "training": False,
    },
    {
        "name": "alpha_dropout_infer",
        "class": "AlphaDropout",
        "config": {"rate": 0.3},
        "inputs": [(4, 6)],
        "training": False,
    },
    {
        "name": "spatial_dropout2d_infer",
        "class": "SpatialDropout2D",
        "config": {"rate": 0.3},
        "inputs": [(2, 3, 3, 4)],
        "training": False,
    },
    # ------------------------------------------------------------------ core
    {"name": "identity", "class": "Identity", "inputs": [(4, 6)]},
    {"name": "activity_regularization", "class": "ActivityRegularization", "inputs": [(4, 6)]},
    {"name": "permute", "class": "Permute", "config": {"dims": [2, 1]}, "inputs": [B3]},
    {
        "name": "permute_4d",
        "class": "Permute",
        "config": {"dims": [3, 1, 2]},
        "inputs": [(2, 3, 4, 5)],
    },
    {"name": "repeat_vector", "class": "RepeatVector", "config": {"n": 4}, "inputs": [(3, 5)]},
    {"name": "masking", "class": "Masking", "inputs": [(2, 5, 3)], "zero_steps": [1, 3]},
    {
        "name": "masking_value",
        "class": "Masking",
        "config": {"mask_value": 0.0},
        "inputs": [(3, 4, 2)],
        "zero_steps": [0],
    },
    {"name": "unit_normalization", "class": "UnitNormalization", "inputs": [B3]},
    {
        "name": "unit_normalization_axes",
        "class": "UnitNormalization",
        "config": {"axis": [1, 2]},
        "inputs": [B3],
    },
    # ------------------------------------------------------------------ dot
    {
        "name": "dot_1",
        "class": "Dot",
        "config": {"axes": 1},
        "inputs": [(3, 5), (3, 5)],
        "call": "list",
    },
    {
        "name": "dot_1_normalize",
        "class": "Dot",
        "config": {"axes": 1, "normalize": True},
        "inputs": [(3, 5), (3, 5)],
        "call": "list",
    },
    {
        "name": "dot_22",
        "class": "Dot",
        "config": {"axes": [2, 2]},
        "inputs": [(2, 3, 4), (2, 5, 4)],
        "call": "list",
    },
    {
        "name": "dot_11",
        "class": "Dot",
        "config": {"axes": [1, 1]},
        "inputs": [(2, 3, 4), (2, 3, 6)],
        "call": "list",
    },
    {
        "name": "dot_21",
        "class": "Dot",
        "config": {"axes": [2, 1]},
        "inputs": [(2, 3, 4), (2, 4, 5)],
        "call": "list",
    },
    {
        "name": "dot_12_normalize",
        "class": "Dot",
        "config": {"axes": [1, 2], "normalize": True},
        "inputs": [(2, 4, 3), (2, 5, 4)],
        "call": "list",
    },
    {
        "name": "dot_mixed_rank",
        "class": "Dot",
        "config": {"axes": [1, 1]},
        "inputs": [(2, 4), (2, 4, 5)],
        "call": "list",
    },
    # ------------------------------------------------------------------ normalisation
    {
        "name": "group_norm",
        "class": "GroupNormalization",
        "config": {"groups": 2},
        "inputs": [(2, 5, 4)],
    },
    {
        "name": "group_norm_per_channel",
        "class": "GroupNormalization",
        "config": {"groups": -1},
        "inputs": [(2, 3, 3, 4)],
    },
    {
        "name": "group_norm_axis1",
        "class": "GroupNormalization",
        "config": {"groups": 3, "axis": 1, "epsilon": 1e-5},
        "inputs": [(2, 6, 5)],
    },
    {
        "name": "group_norm_no_center",
        "class": "GroupNormalization",
        "config": {"groups": 1, "center": False},
        "inputs": [(3, 4, 6)],
    },
    # ------------------------------------------------------------------ einsum dense
    {
        "name": "einsum_ab_bc",
        "class": "EinsumDense",
        "config": {"equation": "ab,bc->ac", "output_shape": 5, "bias_axes": "c"},
        "inputs": [(3, 4)],
    },
    {
        "name": "einsum_abc_cd",
        "class": "EinsumDense",
        "config": {
            "equation": "abc,cd->abd",
            "output_shape": [None, 5],
            "bias_axes": "d",
            "activation": "relu",
        },
        "inputs": [B3],
    },
    {
        "name": "einsum_abc_cde",
        "class": "EinsumDense",
        "config": {"equation": "abc,cde->abde", "output_shape": [None, 2, 3], "bias_axes": "de"},
        "inputs": [B3],
    },
    {
        "name": "einsum_abcd_cde",
        "class": "EinsumDense",
        "config": {"equation": "abcd,cde->abe", "output_shape": [None, 5], "bias_axes": "e"},
        "inputs": [(2, 4, 2, 3)],
    },
    {
        "name": "einsum_ellipsis",
        "class": "EinsumDense",
        "config": {"equation": "...b,bc->...c", "output_shape": 5},
        "inputs": [B3],
    },
    {
        "name": "einsum_transposed_out",
        "class": "EinsumDense",
        "config": {"equation": "abc,cd->adb", "output_shape": [5, None], "bias_axes": "d"},
        "inputs": [B3],
    },
    # ------------------------------------------------------------------ attention
    {
        "name": "attention_dot",
        "class": "Attention",
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "list",
    },
    {
        "name": "attention_scale_key",
        "class": "Attention",
        "config": {"use_scale": True},
        "inputs": [(2, 4, 6), (2, 5, 3), (2, 5, 6)],
        "call": "list",
    },
    {
        "name": "attention_concat",
        "class": "Attention",
        "config": {"score_mode": "concat", "use_scale": True},
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "list",
    },
    {
        "name": "attention_masks",
        "class": "Attention",
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "list",
        "bool_kwargs": {"mask": [(2, 4), (2, 5)]},
        "bool_list": True,
    },
    {
        "name": "attention_causal",
        "class": "Attention",
        "inputs": [(2, 4, 6), (2, 4, 6)],
        "call": "list",
        "kwargs": {"use_causal_mask": True},
    },
    {
        "name": "additive_attention",
        "class": "AdditiveAttention",
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "list",
    },
    {
        "name": "additive_attention_noscale_mask",
        "class": "AdditiveAttention",
        "config": {"use_scale": False},
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "list",
        "bool_kwargs": {"mask": [(2, 4), (2, 5)]},
        "bool_list": True,
    },
    {
        "name": "mha",
        "class": "MultiHeadAttention",
        "config": {"num_heads": 2, "key_dim": 3},
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "args",
    },
    {
        "name": "mha_value_dim_out",
        "class": "MultiHeadAttention",
        "config": {
            "num_heads": 3,
            "key_dim": 2,
            "value_dim": 4,
            "output_shape": 7,
            "use_bias": False,
        },
        "inputs": [(2, 4, 6), (2, 5, 5), (2, 5, 3)],
        "call": "args",
    },
    {
        "name": "mha_mask",
        "class": "MultiHeadAttention",
        "config": {"num_heads": 2, "key_dim": 4},
        "inputs": [(2, 4, 6), (2, 5, 6)],
        "call": "args",
        "bool_kwargs": {"attention_mask": [(2, 4, 5)]},
    },
    {
        "name": "mha_causal_self",
        "class": "MultiHeadAttention",
        "config": {"num_heads": 2, "key_dim": 3},
        "inputs": [(2, 5, 6), (2, 5, 6)],
        "call": "args",
        "kwargs": {"use_causal_mask": True},
    },
    # ------------------------------------------------------------------ wrappers
    {
        "name": "time_distributed_dense",
        "class": "TimeDistributed",
        "wrap": {"class": "Dense", "config": {"units": 3, "activation": "tanh"}},
        "inputs": [(2, 4, 5)],
    },
    {
        "name": "time_distributed_conv",
        "class": "TimeDistributed",
        "wrap": {"class": "Conv2D", "config": {"filters": 2, "kernel_size": 3}},
        "inputs": [(2, 3, 5, 5, 2)],
    },
]

IMG = (2, 5, 7, 3)

CASES += [
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

CASES += [
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

CASES += [
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
CASES += [
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

CASES += [
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

CASES += [
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

CASES += [
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
