"""`PrecisionTable`: a small frozen, hashable mapping from a precision name to a rate."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ipusim.errors import HardwareSpecError, InvalidTypeError
from ipusim.hardware.units import parse_number

__all__ = ["PrecisionTable"]


def _normalise(precision: object) -> str:
    if not isinstance(precision, str):
        raise InvalidTypeError(
            f"precision: got {type(precision).__name__} {precision!r}; expected a string "
            "such as 'fp32' or 'fp16.16'"
        )
    return precision.strip().lower()


@dataclass(frozen=True, slots=True, eq=False)
class PrecisionTable(Mapping[str, float]):
    """Rates per numeric precision, e.g. AMP FLOPs per cycle per tile.

    Behaves as a read-only ``Mapping[str, float]`` and is hashable, so a frozen spec holding it stays
    hashable. Keys are lower-case precision names ("fp32", "fp16", "fp16.16", "fp16.32"); look-ups
    are case-insensitive. It compares equal to any mapping with the same items.

    Args:
        entries: a mapping ``{precision: rate}`` or an iterable of ``(precision, rate)`` pairs.
            Rates are non-negative finite numbers; they are stored as floats, sorted by key.

    Example:
        >>> amp = PrecisionTable({"fp32": 32, "fp16.16": 128})
        >>> amp.rate("FP16.16")
        128.0
    """

    entries: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        raw = self.entries
        pairs: Iterable[object] = raw.items() if isinstance(raw, Mapping) else raw
        if isinstance(raw, str | bytes) or not isinstance(pairs, Iterable):
            raise InvalidTypeError(
                f"PrecisionTable: got {type(raw).__name__} {raw!r}; expected a mapping "
                "{precision: rate} or (precision, rate) pairs"
            )
        table: dict[str, float] = {}
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise InvalidTypeError(
                    f"PrecisionTable: entry {pair!r} is not a (precision, rate) pair"
                )
            key, value = _normalise(pair[0]), pair[1]
            if key in table:
                raise HardwareSpecError(f"PrecisionTable: precision {key!r} is given twice")
            table[key] = parse_number(value, f"PrecisionTable: rate for {key!r}")
        if not table:
            raise HardwareSpecError("PrecisionTable: needs at least one (precision, rate) entry")
        object.__setattr__(self, "entries", tuple(sorted(table.items())))

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precision names, sorted."""
        return tuple(key for key, _ in self.entries)

    def _message(self, precision: object, what: str) -> str:
        return (
            f"unknown precision {precision!r} for {what}; valid precisions: "
            f"{', '.join(self.precisions)}"
        )

    def rate(self, precision: str, what: str = "this table") -> float:
        """Return the rate for ``precision`` (case-insensitive).

        Args:
            precision: e.g. "fp32", "fp16.16".
            what: what the table holds, for the error message.

        Raises:
            ValueError: the precision is not in the table; the message lists the valid ones.
        """
        key = _normalise(precision)
        for name, value in self.entries:
            if name == key:
                return value
        raise HardwareSpecError(self._message(precision, what))

    def with_rate(self, precision: str, rate: float) -> PrecisionTable:
        """Return a copy with ``precision`` set to ``rate`` (added when absent)."""
        table = dict(self.entries)
        table[_normalise(precision)] = rate
        return PrecisionTable(table)  # type: ignore[arg-type]

    def __getitem__(self, precision: str) -> float:
        try:
            return self.rate(precision)
        except (ValueError, TypeError):
            raise KeyError(self._message(precision, "this table")) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.precisions)

    def __len__(self) -> int:
        return len(self.entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PrecisionTable):
            return self.entries == other.entries
        if isinstance(other, Mapping):
            try:
                return dict(self.entries) == {_normalise(k): v for k, v in other.items()}
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.entries)

    def __repr__(self) -> str:
        return f"PrecisionTable({dict(self.entries)!r})"
