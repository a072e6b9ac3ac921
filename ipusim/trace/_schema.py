"""The schema of trace records: tracks, phases, columns, and the checks every record passes."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from ipusim.errors import TraceError
from ipusim.lowering.program import PHASES

#: Latest simulated time (picoseconds) a trace holds: int64 picoseconds reach ~106.7 days; half
#: of that keeps a start plus a duration from wrapping. D: 2**62 ps (~53.4 days).
MAX_TIME_PS = 2**62

#: IPU index of the host.
HOST = -1

#: Every track, in display order.
TRACKS = ("compute", "exchange", "sync", "host-io", "link", "remote", "host")

#: Tracks that are states of an IPU (at most one at a time; idle otherwise).
IPU_STATE_TRACKS = ("compute", "exchange", "sync", "host-io", "link", "remote")
#: Their track codes (indices in :data:`TRACKS`).
STATE_CODES = np.array([TRACKS.index(t) for t in IPU_STATE_TRACKS], dtype=np.int64)

#: Tracks the host may record on.
HOST_TRACKS = ("host", "host-io")

#: Phases a record may carry ('' = none).
TRACE_PHASES = ("", *PHASES, "host")

#: Host work of the per-execution round trip: the IPUs wait while the host does it.
HOST_ROUND_TRIP_WORK = ("execution overhead", "weight read-back", "callbacks", "outfeed drain")

#: Column names, in storage order.
COLUMNS = (
    "ipu",
    "track",
    "name",
    "layer",
    "op",
    "phase",
    "step",
    "micro_batch",
    "start_ps",
    "end_ps",
    "bytes",
    "flops",
)
STRING_COLUMNS = ("track", "name", "layer", "op", "phase")

_TRACK_INDEX = {track: i for i, track in enumerate(TRACKS)}
_PHASE_SET = frozenset(TRACE_PHASES)
_IPU_TRACK_SET = frozenset(IPU_STATE_TRACKS)
_HOST_TRACK_SET = frozenset(HOST_TRACKS)


def check_record(ipu: int, track: str, name: str, phase: str, start_ps: int, end_ps: int) -> None:
    if track not in _TRACK_INDEX:
        raise TraceError(f"track must be one of {TRACKS}; got {track!r} (record {name!r})")
    if ipu == HOST:
        if track not in _HOST_TRACK_SET:
            raise TraceError(
                f"the host (ipu={HOST}) records only on tracks {HOST_TRACKS}; got track "
                f"{track!r} (record {name!r}); record IPU states with the IPU's index"
            )
    elif ipu < 0:
        raise TraceError(f"ipu must be >= 0 (or {HOST} for the host); got {ipu} ({name!r})")
    elif track not in _IPU_TRACK_SET:
        raise TraceError(
            f"IPU {ipu} records only on tracks {IPU_STATE_TRACKS}; got track {track!r} "
            f"(record {name!r}); host work goes on ipu={HOST}"
        )
    if phase not in _PHASE_SET:
        raise TraceError(f"phase must be one of {TRACE_PHASES}; got {phase!r} (record {name!r})")
    if start_ps < 0:
        raise TraceError(f"start_ps must be >= 0; got {start_ps} (record {name!r} on {track!r})")
    if end_ps < start_ps:
        raise TraceError(
            f"end_ps ({end_ps}) is before start_ps ({start_ps}) for record {name!r} on IPU {ipu} "
            f"track {track!r}; a record must end at or after its start"
        )


def int_column(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise TraceError(f"column {name!r} must be one-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    limits = np.iinfo(np.int64)
    if arr.dtype.kind not in "iu" or (arr.dtype.kind == "u" and int(arr.max()) > limits.max):
        bad = next(
            (
                v
                for v in arr.tolist()
                if not isinstance(v, int)
                or isinstance(v, bool)
                or not limits.min <= v <= limits.max
            ),
            None,
        )
        raise TraceError(
            f"column {name!r} must hold integers in the int64 range; got {bad!r} (dtype "
            f"{arr.dtype}); times are integer picoseconds and counts are integers"
        )
    return arr.astype("<i8", copy=False)


def str_column(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise TraceError(f"column {name!r} must be one-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype="<U1")
    if arr.dtype.kind != "U":
        raise TraceError(f"column {name!r} must hold strings; got dtype {arr.dtype}")
    # The narrowest width, so equal content always has an equal dtype (and fingerprint).
    width = max(1, int(np.char.str_len(arr).max()))
    return arr.astype(f"<U{width}", copy=False)


def validate(cols: Mapping[str, np.ndarray]) -> None:
    ipu, track, phase = cols["ipu"], cols["track"], cols["phase"]
    start, end = cols["start_ps"], cols["end_ps"]
    bad_track = ~np.isin(track, TRACKS)
    bad_phase = ~np.isin(phase, TRACE_PHASES)
    host = ipu == HOST
    bad_place = np.where(host, ~np.isin(track, HOST_TRACKS), ~np.isin(track, IPU_STATE_TRACKS))
    bad = bad_track | bad_phase | (ipu < HOST) | bad_place | (start < 0) | (end < start)
    for column, low in (("bytes", 0), ("flops", 0), ("step", -1), ("micro_batch", -1)):
        if (cols[column] < low).any():
            raise TraceError(f"{column} must be >= {low}; got {int(cols[column].min())}")
    if len(end) and int(end.max()) > MAX_TIME_PS:
        raise TraceError(f"end_ps must be <= {MAX_TIME_PS} (about 53 days); got {int(end.max())}")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        # Re-run the scalar check on the first bad record for its precise message.
        check_record(
            int(ipu[i]),
            str(track[i]),
            str(cols["name"][i]),
            str(phase[i]),
            int(start[i]),
            int(end[i]),
        )
