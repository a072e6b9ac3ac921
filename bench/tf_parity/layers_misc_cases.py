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

# The rest of the cases (preprocessing and beyond) live beside this file.
from layers_misc_cases_more import PREPROCESSING  # noqa: E402

CASES += PREPROCESSING
