"""The ``keras.datasets`` data sets: the files Keras downloads, read from disk, else synthetic.

See :mod:`ipusim.data.datasets._store` for where files are looked for and how synthetic data is
announced and recorded, :mod:`~ipusim.data.datasets.images`, :mod:`~ipusim.data.datasets.text`
and :mod:`~ipusim.data.datasets.tabular` for each loader.
"""

from ipusim.data.datasets._plain_pickle import DatasetFileError
from ipusim.data.datasets._store import (
    SyntheticDataWarning,
    data_note,
    record_synthetic,
    reset_provenance,
)

__all__ = [
    "DatasetFileError",
    "SyntheticDataWarning",
    "data_note",
    "record_synthetic",
    "reset_provenance",
]
