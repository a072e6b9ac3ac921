"""``keras.datasets.reuters``: see :func:`ipusim.data.datasets.text.load_reuters`."""

from ipusim.data.datasets.text import REUTERS_LABEL_NAMES
from ipusim.data.datasets.text import get_reuters_word_index as get_word_index
from ipusim.data.datasets.text import load_reuters as load_data


def get_label_names() -> tuple[str, ...]:
    """The 46 topic names, in label order (``keras.datasets.reuters.get_label_names``)."""
    return REUTERS_LABEL_NAMES


__all__ = ["get_label_names", "get_word_index", "load_data"]
