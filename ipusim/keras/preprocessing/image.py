"""``keras.preprocessing.image`` (and ``keras.utils``): converting images to and from arrays.

``img_to_array`` is pure NumPy; ``array_to_img``, ``load_img`` and ``save_img`` use Pillow, which
ipusim has through matplotlib (as Keras uses it). Channels-last throughout, as ipusim's Keras.
The augmentation classes (``ImageDataGenerator``) are not provided: use ``tf.data`` maps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ipusim._files import atomic_output
from ipusim.errors import ConfigurationError, UnsupportedError

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img"]


def _check_format(data_format: str | None) -> None:
    if data_format not in (None, "channels_last"):
        raise UnsupportedError(
            f"image utilities: data_format={data_format!r} is not simulated; ipusim's Keras is "
            "channels_last (pass data_format=None or 'channels_last')"
        )


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = "float32") -> np.ndarray:
    """An image (Pillow image or array) as a float array of shape (height, width, channels)."""
    _check_format(data_format)
    array = np.asarray(img, dtype=dtype or "float32")
    if array.ndim == 2:
        return array.reshape((*array.shape, 1))
    if array.ndim != 3:
        raise ConfigurationError(f"img_to_array: unsupported image shape {array.shape}")
    return array


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - matplotlib brings Pillow
        raise UnsupportedError("image utilities need Pillow (pip install pillow)") from exc
    return Image


def array_to_img(
    x: Any, data_format: str | None = None, scale: bool = True, dtype: Any = "float32"
) -> Any:
    """A (height, width, 1 | 3 | 4) array as a Pillow image (scaled to 0-255 when ``scale``)."""
    _check_format(data_format)
    array = np.asarray(x, dtype=dtype or "float32")
    if array.ndim != 3 or array.shape[-1] not in (1, 3, 4):
        raise ConfigurationError(
            f"array_to_img: expected an image array of rank 3 with 1, 3 or 4 channels, "
            f"received shape {array.shape}"
        )
    if scale:
        array = array - np.min(array)
        peak = np.max(array)
        if peak != 0:
            array = array / peak
        array = array * 255
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    pixels = array.astype("uint8")
    return _pil().fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode)


def load_img(
    path: str | Path,
    grayscale: bool = False,
    color_mode: str = "rgb",
    target_size: tuple[int, int] | None = None,
    interpolation: str = "nearest",
    keep_aspect_ratio: bool = False,
) -> Any:
    """The image file at ``path`` as a Pillow image (converted to ``color_mode``, resized)."""
    image_module = _pil()
    if grayscale:
        color_mode = "grayscale"
    modes = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
    if color_mode not in modes:
        raise ConfigurationError(
            f'load_img: color_mode must be "grayscale", "rgb" or "rgba", received {color_mode!r}'
        )
    if keep_aspect_ratio:
        raise UnsupportedError("load_img(keep_aspect_ratio=True) is not simulated by ipusim")
    with open(path, "rb") as handle:
        img = image_module.open(handle)
        img.load()
    if img.mode != modes[color_mode]:
        img = img.convert(modes[color_mode])
    if target_size is not None and (img.size[1], img.size[0]) != tuple(target_size):
        resample = getattr(image_module, interpolation.upper(), None)
        if resample is None:
            raise ConfigurationError(f"load_img: unknown interpolation {interpolation!r}")
        img = img.resize((target_size[1], target_size[0]), resample)
    return img


def save_img(
    path: str | Path,
    x: Any,
    data_format: str | None = None,
    file_format: str | None = None,
    scale: bool = True,
    **kwargs: Any,
) -> None:
    """Save an image array to ``path`` (the format from ``file_format`` or the suffix)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (
        file_format == "jpg" or str(path).lower().endswith((".jpg", ".jpeg"))
    ):
        img = img.convert("RGB")
    if file_format is None:  # Pillow names the format from the suffix only for a path
        suffix = Path(path).suffix.lower()
        file_format = _pil().registered_extensions().get(suffix)
        if file_format is None:
            raise ConfigurationError(
                f"save_img: cannot tell the image format of {str(path)!r} from its suffix; "
                "pass file_format ('png', 'jpeg', ...) or use a suffix such as .png"
            )
    with atomic_output(path) as out:  # a reader never sees half an image
        img.save(out, format=file_format, **kwargs)
