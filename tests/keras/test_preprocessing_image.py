"""keras.preprocessing.image conversions: arrays to Pillow images and back, files round trip."""

from __future__ import annotations

import numpy as np
import pytest

from ipusim.errors import UnsupportedError
from ipusim.keras.preprocessing import image


def test_img_to_array_adds_the_channel_axis_of_a_grey_image():
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    out = image.img_to_array(grey)
    assert out.shape == (3, 4, 1) and out.dtype == np.float32
    np.testing.assert_array_equal(out[..., 0], grey)


def test_array_to_img_scales_to_0_255_as_keras():
    x = np.array([[[0.0], [0.5]], [[1.0], [0.25]]])
    img = image.array_to_img(x)
    assert img.mode == "L" and img.size == (2, 2)
    # Keras: x - min, / max, * 255, then uint8 (truncation).
    np.testing.assert_array_equal(np.asarray(img), [[0, 127], [255, 63]])
    raw = image.array_to_img(np.full((2, 2, 3), 7.0), scale=False)
    assert raw.mode == "RGB" and np.asarray(raw).max() == 7


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (5, 6, 3)).astype(np.float32)
    path = tmp_path / "img.png"
    image.save_img(path, x, scale=False)
    back = image.img_to_array(image.load_img(path))
    np.testing.assert_array_equal(back, x)
    grey = image.img_to_array(image.load_img(path, color_mode="grayscale", target_size=(3, 2)))
    assert grey.shape == (3, 2, 1)


def test_channels_first_is_refused():
    with pytest.raises(UnsupportedError, match="channels_last"):
        image.img_to_array(np.zeros((3, 4, 4)), data_format="channels_first")
