"""What an input pipeline costs on the host: seconds per sample, from its transformations.

The figures were measured with real ``tf.data`` (TensorFlow CPU 2.21) on ipusim's calibration
machine and fitted per transformation: ``bench/tfdata/measure_tfdata.py``, results and method in
``bench/tfdata/README.md`` and ``bench/tfdata/results/cost_model_cpu_min.json`` (process CPU time,
which composes: the seed tutorial's pipeline predicted from its parts within 1.1%). Each cost has
two parts, scaled separately to the simulated host (:class:`HostCPU`):

- a *compute* part (copies, shuffle buffer accesses, the arithmetic of a cast), scaled by the
  host's single-thread speed;
- a *call* part (each TF function call of a ``map``, the fixed cost of a batch, thread hand-offs),
  scaled by how fast the host switches threads and calls into the runtime.

How a pipeline runs (graphcore/tensorflow ``infeed_iterator.cc``): one infeed thread pulls
elements; sequential transformations run on it, parallel maps (``num_parallel_calls``) on a pool
of the host's cores; ``prefetch`` puts the transformations above it on a thread of their own.
The pipeline delivers samples at the pace of its slowest thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ipusim.data import _order, _sources, _transforms
from ipusim.data._nest import flatten
from ipusim.errors import ConfigurationError

# Costs on the calibration machine, microseconds (bench/tfdata/results/cost_model_cpu_min.json).
#: from_tensor_slices: per element, slicing it and copying it into its batch (fit over element
#: sizes from 785 B to 150 kB: 1.3 us + 0.81 ns per byte).
SLICE_US, SLICE_US_PER_BYTE = 1.3, 0.00081
#: batch(): fixed cost of a batch (its consumer's call excluded).
BATCH_CALL_US = 20.7
#: repeat(): per element.
REPEAT_US = 1.55
#: shuffle(buffer): per element, by log10(buffer) (cache misses grow with the buffer), and per
#: byte of large elements.
SHUFFLE_US = ((2.0, 0.3), (3.0, 0.6), (4.0, 1.4), (4.5, 1.7))
SHUFFLE_US_PER_BYTE = 0.00004
#: map() per element: one TF function call (a cast measured 15.9-23.6 us, a normalisation 27.3).
MAP_CALL_US = 20.0
#: map() after batch(): one call per batch, plus the arithmetic per sample (cast f64 0.31,
#: normalise 0.56).
MAP_BATCH_CALL_US, MAP_BATCH_US_PER_SAMPLE = 110.0, 0.4
#: cache(): replaying a cached element.
CACHE_READ_US = 1.98
#: filter(): one predicate call per element, as a map.
FILTER_CALL_US = MAP_CALL_US
#: Keras' NumPy adapter (``fit(x_array, ...)`` as IPU Keras 2.6 builds it: shuffled index batches
#: gathered by a parallel map): per batch and per sample.
ARRAY_BATCH_CALL_US, ARRAY_US_PER_SAMPLE = 136.0, 0.60
#: An ImageNet training loader (PyTorch DataLoader worker with torchvision's transforms): PIL
#: decodes one JPEG of ImageNet's size, takes a random resized crop to 224 x 224 and a flip, and
#: hands a uint8 array on; one worker process does one image at a time. Calibration machine,
#: best of 8 runs of ``bench/host/measure_host.py`` (``results/this_machine.json``
#: ``jpeg_ms_best``; 1.64-5.01 ms per image at load 5.2-6.8), M.
JPEG_LOADER_US = 1635.0
#: A training loop that iterates ``torch.utils.data.DataLoader(num_workers=0)`` over
#: ``torchvision.datasets.MNIST`` (ToTensor, Normalize) in its own thread, under a tqdm bar it
#: updates every step (the PopXL MNIST tutorials). Calibration machine, microseconds:
#: per sample the PIL image and the scaling (M: bench/host/measure_torch_loader.py, 18.0-18.3,
#: done with NumPy) plus PyTorch's dispatch of its ~9 tensor operations at ~3 us each (E);
#: per step tqdm's refresh (M: 31-38) and the collate and casts' ~6 operations (E).
TORCH_MNIST_SAMPLE_US = 18.0 + 9 * 3.0
TORCH_MNIST_STEP_US = 31.0 + 6 * 3.0


@dataclass(frozen=True)
class HostCPU:
    """The simulated host's CPU, relative to the calibration machine.

    Attributes:
        cores: cores the input pipeline's thread pool may use.
        compute_scale: time multiplier of compute terms.
        call_scale: time multiplier of call and hand-off terms.
    """

    cores: int = 1
    compute_scale: float = 1.0
    call_scale: float = 1.0


@dataclass
class _Threads:
    """Seconds per sample spent on each thread of the pipeline (the consumer's first)."""

    busy: list[float]
    cpu: HostCPU

    def add(self, compute_us: float = 0.0, call_us: float = 0.0, parallel: int = 1) -> None:
        cost = (compute_us * self.cpu.compute_scale + call_us * self.cpu.call_scale) * 1e-6
        self.busy[-1] += cost / max(parallel, 1)

    def split(self) -> None:
        self.busy.append(0.0)


def _element_bytes(spec: Any) -> int:
    total = 0
    for leaf in flatten(spec):
        shape = getattr(leaf, "shape", ())
        size = math.prod(d for d in shape if d is not None) if shape else 1
        total += size * np.dtype(getattr(leaf, "dtype", "float32")).itemsize
    return total


def _shuffle_us(buffer: int) -> float:
    x = math.log10(max(buffer, 1))
    points = SHUFFLE_US
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def _parallelism(calls: Any, cpu: HostCPU) -> int:
    """Threads a map runs on: 1 when sequential, the host's cores for AUTOTUNE (-1)."""
    if calls is None:
        return 1
    if calls < 0:
        return cpu.cores
    return max(1, min(int(calls), cpu.cores))


def _walk(node: Any, threads: _Threads, cpu: HostCPU) -> int:
    """Add ``node``'s cost per sample (and its inputs') to ``threads``; return the samples per
    element it produces."""
    if isinstance(node, _sources.TensorSlices):
        if node.kind == "TensorDataset":
            # from_tensors(): one element handed on by reference, usually a whole batch.
            leaves = flatten(node.element_spec)
            shape = getattr(leaves[0], "shape", ()) if leaves else ()
            samples = int(shape[0]) if shape and shape[0] else 1
            threads.add(compute_us=REPEAT_US / samples)
            return samples
        threads.add(compute_us=SLICE_US + SLICE_US_PER_BYTE * _element_bytes(node.element_spec))
        return 1
    if isinstance(node, _order.Prefetch):
        samples = _walk(node.input, threads, cpu)
        threads.split()  # the transformations above run on a thread of their own
        return samples
    if isinstance(node, _order.Shard):
        # tf.data's shard reads every input element and keeps one in num_shards: each sample it
        # hands on costs its input num_shards samples' work (D).
        before = list(threads.busy)
        samples = _walk(node.input, threads, cpu)
        for i, busy in enumerate(threads.busy):
            start = before[i] if i < len(before) else 0.0
            threads.busy[i] = start + (busy - start) * node.num_shards
        return samples
    samples = _walk(node.input, threads, cpu) if node.inputs else 1
    per = 1.0 / samples  # this node's per-element cost, per sample
    if isinstance(node, _transforms.Batch):
        batch = int(node.params["batch_size"])
        threads.add(call_us=BATCH_CALL_US / (batch * samples))
        return batch * samples
    if isinstance(node, _transforms.Map):
        parallel = _parallelism(node.params.get("num_parallel_calls"), cpu)
        if samples > 1:
            threads.add(MAP_BATCH_US_PER_SAMPLE, MAP_BATCH_CALL_US * per, parallel)
        else:
            threads.add(call_us=MAP_CALL_US, parallel=parallel)
    elif isinstance(node, _transforms.Filter):
        threads.add(call_us=FILTER_CALL_US * per)
    elif isinstance(node, _order.Shuffle):
        size = _element_bytes(node.element_spec)
        buffer = node.params.get("buffer_size", 1)
        threads.add(compute_us=(_shuffle_us(buffer) + SHUFFLE_US_PER_BYTE * size) * per)
    elif isinstance(node, _order.Repeat):
        threads.add(compute_us=REPEAT_US * per)
    elif isinstance(node, _order.Cache):
        threads.add(compute_us=CACHE_READ_US * per)
    return samples  # take, skip, zip, ... are a pass-through at this resolution


def dataset_seconds_per_sample(dataset: Any, cpu: HostCPU) -> float:
    """Seconds per sample the pipeline of ``dataset`` needs on its slowest thread."""
    threads = _Threads([0.0], cpu)
    _walk(dataset._node, threads, cpu)
    return max(threads.busy)


def arrays_seconds_per_sample(batch_size: int, cpu: HostCPU) -> float:
    """Seconds per sample of Keras' adapter for NumPy arrays (shuffled index batches gathered by
    a map over the host's cores, then the batch itself on the infeed thread)."""
    gather = (
        ARRAY_BATCH_CALL_US * cpu.call_scale + ARRAY_US_PER_SAMPLE * batch_size * cpu.compute_scale
    )
    per_batch = gather / max(cpu.cores, 1) + BATCH_CALL_US * cpu.call_scale
    return per_batch * 1e-6 / batch_size


def input_seconds_per_sample(x: Any, batch_size: int | None, cpu: HostCPU) -> float | None:
    """Host seconds per sample of what ``fit`` / ``evaluate`` / ``predict`` is given: a Dataset's
    pipeline, Keras' adapter for arrays, or None for inputs it cannot cost (generators)."""
    from ipusim.data.dataset import Dataset

    if isinstance(x, Dataset):
        return dataset_seconds_per_sample(x, cpu)
    if isinstance(x, np.ndarray | list | tuple | dict):
        return arrays_seconds_per_sample(int(batch_size or DEFAULT_BATCH_SIZE), cpu)
    return None


def loader_seconds_per_sample(workers: int, cpu: HostCPU) -> float:
    """Host seconds per sample of an image-decoding loader with ``workers`` worker processes
    (``torch.utils.data.DataLoader(num_workers=...)`` over JPEG files) on ``cpu``: each worker
    decodes one image at a time on a core of its own, at most the process's share of cores.

    Raises:
        ValueError: ``workers`` < 1.
    """
    if workers < 1:
        raise ConfigurationError(f"workers must be >= 1 (loader worker processes), got {workers}")
    return JPEG_LOADER_US * cpu.compute_scale * 1e-6 / min(workers, max(cpu.cores, 1))


def torch_mnist_loop_seconds_per_step(batch_size: int, cpu: HostCPU) -> float:
    """Host seconds per step of a loop that feeds each step from an in-thread PyTorch MNIST
    DataLoader (Python work at the host's single-thread speed, serial with the step)."""
    us = TORCH_MNIST_SAMPLE_US * batch_size + TORCH_MNIST_STEP_US
    return us * cpu.compute_scale * 1e-6


#: Keras' batch size when fit is given arrays and no batch_size.
DEFAULT_BATCH_SIZE = 32
