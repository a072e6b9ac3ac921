"""``keras.datasets.imdb``: see :func:`ipusim.data.datasets.text.load_imdb`."""

from ipusim.data.datasets.text import get_imdb_word_index as get_word_index
from ipusim.data.datasets.text import load_imdb as load_data

__all__ = ["get_word_index", "load_data"]
