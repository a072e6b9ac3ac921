"""The errors ipusim raises for problems a user can fix.

Every one derives from :class:`IPUSimError` and also from the built-in type Keras / IPU
TensorFlow raise in the same situation (``ValueError``, ``RuntimeError``, ``NotImplementedError``,
``MemoryError``, ``FileNotFoundError``), so code written for IPU TensorFlow catches them as it
would there, and code written for ipusim can catch them all at once::

    try:
        model.fit(x, y, batch_size=32)
    except ipusim.errors.IPUSimError as error:
        print(error)  # what was expected, what was received, which argument, how to fix it

The messages say what was expected, what was received, which argument it was and how to fix
it. ``ipusim``'s command line prints them on one line (``ipusim VERB: message``) and exits with
status 2; any other exception is a bug in ipusim and is shown with its traceback.

| error | raised when |
| --- | --- |
| :class:`ConfigurationError` | an option or argument has a bad value, or options do not fit together or the system |
| :class:`PipelineConfigurationError` | a pipeline's stages, device mapping or depth do not fit its schedule or the IPUs |
| :class:`StreamingMemoryUnavailableError` | offloading is asked for on a system without Streaming Memory |
| :class:`IncompatibleStateError` | the model's state conflicts with the call (IPU TensorFlow's ``RuntimeError`` cases) |
| :class:`UnsupportedError` | a combination IPU TensorFlow does not support either (its ``NotImplementedError`` cases) |
| :class:`InputDataError` | the data given to fit / evaluate / predict cannot be used |
| :class:`IndexOutOfRangeError` | an index in the data (an Embedding id, a label) is outside its table |
| :class:`InvalidTypeError` | an argument has a type the call does not accept (TensorFlow's ``TypeError``) |
| :class:`KeyNotFoundError` | a name looked up by the user (a slot, a metric, a log key) does not exist |
| :class:`FileAccessError` | a path the user gave cannot be used (a folder where a file is expected ...) |
| :class:`MissingFileError` | a file the user named does not exist |
| :class:`OutOfMemoryError` | a program does not fit in an IPU's SRAM (before anything runs) |
| :class:`OutOfMemoryWarning` | a program may not fit (its working memory is an upper bound) |
| :class:`NonFiniteLossError` | the training loss became NaN or infinite (the weights are kept) |
| :class:`FileFormatError` | a file ipusim reads (trace, report, data set, sweep study ...) is damaged, truncated or implausible |
| :class:`DiskWriteError` | a file cannot be written: the disk is full, the folder is read-only or not writable |
| :class:`ModelFileError` | a saved model or weights file is missing, damaged or does not match |
| :class:`TraceFileError` | a saved trace or report folder is missing, damaged or inconsistent |
| :class:`HardwareSpecError` | a hardware preset, file or override holds an unusable figure |
| :class:`DatasetNotFoundError` | a data set is not on disk and cannot be downloaded |
| :class:`RemovedAPIError` | a class IPU TensorFlow removed (SDK 2.1's ``ipu.keras.Sequential`` ...) is used |
| :class:`NotSimulatedError` | a TensorFlow / Keras name ipusim does not simulate (yet) is used (an ``AttributeError``) |
| :class:`NotSimulatedModuleError` | a TensorFlow / Keras module path ipusim does not provide is imported |

``ipusim.config.ConfigAttributeError`` (an unknown ``IPUConfig`` attribute) is an
:class:`IPUSimError` too.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DatasetNotFoundError",
    "DiskWriteError",
    "FileAccessError",
    "FileFormatError",
    "HardwareSpecError",
    "IPUSimError",
    "IncompatibleStateError",
    "IndexOutOfRangeError",
    "InputDataError",
    "InvalidTypeError",
    "KeyNotFoundError",
    "MissingFileError",
    "ModelFileError",
    "NonFiniteLossError",
    "NotSimulatedError",
    "NotSimulatedModuleError",
    "OutOfMemoryError",
    "OutOfMemoryWarning",
    "PipelineConfigurationError",
    "RemovedAPIError",
    "StreamingMemoryUnavailableError",
    "TraceError",
    "TraceFileError",
    "USER_ERRORS",
    "UnsupportedError",
]


class IPUSimError(Exception):
    """Base of every error ipusim raises for a problem the user can fix."""


class ConfigurationError(IPUSimError, ValueError):
    """An option or argument has a bad value, or options do not fit together or the system."""


class PipelineConfigurationError(ConfigurationError):
    """A pipeline's stages, device mapping or depth do not fit its schedule or the IPUs."""


class StreamingMemoryUnavailableError(ConfigurationError):
    """Offloading was requested on a system without Streaming Memory (e.g. C2 cards)."""


class IncompatibleStateError(IPUSimError, RuntimeError):
    """The model's state conflicts with what is asked (e.g. ``steps_per_execution`` not a
    multiple of the gradient-accumulation count, a stale pipeline stage assignment)."""


class UnsupportedError(IPUSimError, NotImplementedError):
    """A combination IPU TensorFlow does not support (e.g. the Interleaved schedule training
    several stages on one IPU)."""


class InputDataError(IPUSimError, ValueError):
    """The data given to ``fit`` / ``evaluate`` / ``predict`` cannot be used (no samples, a
    batch size of 0, fewer samples than one batch, shapes the IPU cannot run ...)."""


class IndexOutOfRangeError(InputDataError, IndexError):
    """An index in the data is outside its table (an Embedding id >= ``input_dim``, a class
    label >= the number of classes); an ``IndexError`` and an :class:`InputDataError`."""


class InvalidTypeError(IPUSimError, TypeError):
    """An argument has a type the call does not accept (where TensorFlow raises ``TypeError``)."""


class KeyNotFoundError(IPUSimError, KeyError):
    """A name the user looks up does not exist (an optimizer slot, a metric, a log key); a
    ``KeyError`` as in Keras."""

    def __str__(self) -> str:
        # KeyError quotes its argument (it is usually a key); this one holds a sentence.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class FileAccessError(IPUSimError, OSError):
    """A path the user gave cannot be used (a folder where a file is expected ...)."""


class MissingFileError(FileAccessError, FileNotFoundError):
    """A file the user named (a script, a trace) does not exist."""


class OutOfMemoryError(IPUSimError, MemoryError):
    """A program does not fit in an IPU's SRAM (raised before anything runs)."""


class OutOfMemoryWarning(UserWarning):
    """A program may not fit in an IPU's SRAM: it does on the model's lower bound of its working
    memory but not on its upper bound (a recomputing pipeline stage)."""


class NonFiniteLossError(IPUSimError, FloatingPointError):
    """The training loss became NaN or infinite; the step's update was not applied."""


class FileFormatError(IPUSimError, ValueError):
    """A file ipusim reads is damaged, truncated, of another kind, or holds values that are
    inconsistent or implausible; the message names the file, the field and the fix."""


class DiskWriteError(FileAccessError):
    """A file ipusim writes cannot be written: the disk is full, the folder is read-only or not
    writable. Nothing half-written is left behind; the message names the path and the cause."""


class ModelFileError(IPUSimError, ValueError):
    """A model or weights file is missing, corrupt, or does not match the model."""


class TraceError(ValueError):
    """An invalid trace record or an inconsistent trace.

    Raised for records that break the trace's rules; when ipusim's own simulation produces such
    a trace it is a bug in ipusim, so this is not an :class:`IPUSimError`. Problems with saved
    files raise :class:`TraceFileError`, which is.
    """


class TraceFileError(TraceError, FileFormatError):
    """A saved trace file or report folder is missing, damaged, truncated or inconsistent."""


class HardwareSpecError(IPUSimError, ValueError):
    """A hardware preset, TOML file or override holds an unusable figure (zero clock, zero
    bandwidth, zero AMP rate ...), an unknown setting or a bad unit."""


class DatasetNotFoundError(IPUSimError, FileNotFoundError):
    """The data set is not on disk in any searched place and could not be downloaded."""


class RemovedAPIError(IPUSimError, RuntimeError):
    """A class or function IPU TensorFlow removed was used; the message names its replacement."""


class NotSimulatedError(IPUSimError, AttributeError):
    """A TensorFlow / Keras name ipusim does not simulate (yet) was used.

    An ``AttributeError``, so ``hasattr`` and ``getattr(module, name, default)`` behave as
    with any missing attribute; docs/api.md lists every name and its status.
    """


class NotSimulatedModuleError(IPUSimError, ModuleNotFoundError):
    """A TensorFlow / Keras module path (or a name imported with ``from M import N``) that
    ipusim does not provide; a ``ModuleNotFoundError``, so ``except ImportError`` still works."""


#: What a run (compile / fit / evaluate / predict of any model on any configuration) may raise
#: for a configuration or data it cannot run; anything else is a bug in ipusim.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ConfigurationError,
    IncompatibleStateError,
    UnsupportedError,
    InputDataError,
    InvalidTypeError,
    OutOfMemoryError,
)
