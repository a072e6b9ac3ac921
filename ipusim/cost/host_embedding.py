"""Host-link time of host embedding lookups and updates (``ipu.embedding_ops.HostEmbedding``).

IPU TensorFlow's host embedding (``kernels/datastream/host_embedding.cc``, ``HostEmbeddingSGD``)
does, per execution of the op on one replica:

* lookup: the IPU streams the flat int32 indices to the host (``EnqueueLookupIndices``), the host
  copies each row into the stream buffer (``DequeueLookupActivations``, one ``memcpy`` of
  ``encoding * element`` bytes per index) and the IPU streams the rows back;
* update: the IPU streams the indices (``EnqueueUpdateIndices``) and the scaled gradient rows
  (``EnqueueUpdateGrads``) to the host, which adds each row into the table.

Each transfer is one stream copy, priced as the engine prices the infeed and outfeed
(``ipusim.engine.tables``, ``ipusim.session.options.host_link``): the bytes at the link's
bandwidth shared by the replicas streaming at once and capped by the host's stream bandwidth, the
link latency and the host sync that starts the copy (``HostSpec.stream_copy_overhead_s``). The
host's row copies cost what ipusim's input-pipeline model measured for host copies
(``ipusim.data.host_cost.SLICE_US_PER_BYTE``, M, scaled by ``HostSpec.cpu_compute_scale``). The
IPU waits for the whole round trip: the op cannot go on without its rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ipusim.cost.units import seconds_to_ps, transfer_ps
from ipusim.data.host_cost import SLICE_US_PER_BYTE
from ipusim.hardware.specs import HostSpec

__all__ = ["HOST_EMBEDDING_OPS", "INDEX_BYTES", "HostEmbeddingTraffic", "host_embedding_traffic"]

#: The graph ops whose time is the host round trip.
HOST_EMBEDDING_OPS = ("host_embedding_lookup", "host_embedding_update")
#: The indices travel as int32 (S: host_embedding.cc, ``const int* indices``).
INDEX_BYTES = 4


@dataclass(frozen=True)
class HostEmbeddingTraffic:
    """The host traffic of one host embedding op on one replica.

    Attributes:
        copies: the stream copies, in order: ``(direction, bytes)`` with direction "d2h" / "h2d".
        host_bytes: bytes the host copies row by row (the gathered or added rows).
        duration_ps: the IPU's wait: every copy and the host's row copies.
    """

    copies: tuple[tuple[str, int], ...]
    host_bytes: int
    duration_ps: int

    @property
    def bytes(self) -> int:
        """Bytes over the host link, both directions."""
        return sum(n for _, n in self.copies)


def host_embedding_traffic(
    op: str, count: int, width: int, element_bytes: int, host: HostSpec, replicas: int = 1
) -> HostEmbeddingTraffic:
    """The host traffic of a lookup or update of ``count`` rows of ``width`` elements.

    Args:
        op: "host_embedding_lookup" or "host_embedding_update".
        count: indices per replica.
        width: elements per row (the encoding).
        element_bytes: bytes per table element.
        host: the system's ``HostSpec``.
        replicas: replicas streaming at the same time (they share the host link).
    """
    rows = count * width * element_bytes
    indices = ("d2h", count * INDEX_BYTES)
    copies = (indices, ("h2d", rows)) if op == "host_embedding_lookup" else (indices, ("d2h", rows))
    sharing = max(1, min(int(replicas), host.shared_by_ipus))
    link_ps = 0
    for direction, num_bytes in copies:
        bandwidth = min(
            host.bandwidth_bytes_per_s(direction) / sharing, host.stream_bandwidth_bytes_per_s
        )
        link_ps += transfer_ps(num_bytes, bandwidth, host.latency_s)
        link_ps += seconds_to_ps(host.stream_copy_overhead_s)
    host_ps = seconds_to_ps(rows * SLICE_US_PER_BYTE * 1e-6 * host.cpu_compute_scale)
    return HostEmbeddingTraffic(copies, rows, link_ps + host_ps)
