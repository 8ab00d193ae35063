"""JSON-safe values: whatever a strategy returns, made writable as strict JSON.

Every result row, every ``answer --json`` and the report's JSON files go through
:func:`json_safe`, so no value a strategy (or a SQL result, or a server) hands back can
stop a run or write a file that is not JSON:

- bytes become their text when they are UTF-8, else a short hex preview with their size;
- non-finite floats (``inf``, ``nan``) become ``null``, as ``JSON.stringify`` does
  (ECMA-262, SerializeJSONProperty: a non-finite Number serializes as ``null``);
- numpy scalars and arrays become Python numbers and lists; sets and tuples lists;
  dataclasses dicts; mapping keys strings; anything else its ``str()``;
- strings lose lone surrogates (they cannot be written as UTF-8);
- with limits, a string over ``max_chars`` is cut with a marker saying how much was cut,
  and the whole value is bounded by ``max_total`` characters: once spent, the remaining
  items of a list or mapping are replaced by one marker (a ``{"...": marker}`` mapping in
  a list of mappings);
- whatever the limits, the work is bounded too: a value that contains itself becomes a
  marker where it recurs (its ancestors are tracked by id), and at most ``max_values``
  values are converted in all, so sub-lists shared many times over (``a = [a, a]`` 22
  times: four million leaves from 22 lists) are cut like an overlong value, not expanded.
"""

from __future__ import annotations

import dataclasses
import decimal
import enum
import json
import math
import numbers
import re
from collections.abc import Mapping, Set
from typing import Any

import numpy as np

#: Characters one string keeps in a result row (an answer longer than this fails its row).
MAX_CHARS = 100_000
#: Characters one result row keeps in all: room for MemAgent's memory after each of the 2,000
#: chunks of a 10M-token corpus (1,024 tokens each, about 9M characters), under 50 MB of UTF-8.
MAX_TOTAL_CHARS = 16_000_000
#: Nesting kept; deeper levels become a marker.
MAX_DEPTH = 64
#: Values (strings, numbers, lists, mappings...) converted in one call at most, whatever the
#: character limits: MemAgent's 2,000 steps over a 10M-token corpus are about 20,000, a
#: 10,000-step answer of eight fields 90,000. Shared sub-values count each time they recur,
#: so a small value shared many times over costs no more than this.
MAX_VALUES = 100_000
#: What a value that contains itself is written as where it recurs.
CYCLE = "<a value that contains itself>"
#: Bytes shown (as hex) of a value that is not UTF-8 text.
BYTES_PREVIEW = 32
#: Strings at least this long are checked once per conversion however often they recur.
LONG_TEXT = 256
#: Integers wider than this are written as a marker (Python refuses to print ints over 4,300
#: digits).
MAX_INT_BITS = 4096

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNLIMITED = float("inf")


def json_safe(
    value: Any,
    *,
    max_chars: int | None = MAX_CHARS,
    max_total: int | None = MAX_TOTAL_CHARS,
    max_values: int = MAX_VALUES,
) -> Any:
    """``value`` as plain JSON data (dict, list, str, finite float, int, bool, None).

    Args:
        value: Anything (one that contains itself, or shares sub-values many times over, too).
        max_chars: Longest string kept whole (``None``: no cut).
        max_total: Characters kept over the whole value (``None``: no bound).
        max_values: Values converted at most; the rest is cut as ``max_total`` cuts.
    """
    return _Converter(max_chars, max_total, max_values).convert(value, 0)


def dumps(value: Any, *, indent: int | None = None, **limits: Any) -> str:
    """Strict JSON text of :func:`json_safe` ``(value, **limits)`` (never ``NaN`` or
    ``Infinity``)."""
    return json.dumps(
        json_safe(value, **limits), ensure_ascii=False, allow_nan=False, indent=indent
    )


def is_plain(value: Any) -> bool:
    """Whether ``value`` is already strict JSON data (then :func:`json_safe` need not copy it;
    tuples count, JSON writes them as lists). A value deeper than :data:`MAX_DEPTH` or with more
    than :data:`MAX_VALUES` values is not: the check stops there and :func:`json_safe` bounds it."""
    return _Plain().check(value, 0)


class _Plain:
    """One :func:`is_plain` check: the values left to look at are shared by the whole value."""

    def __init__(self) -> None:
        self.left = MAX_VALUES

    def check(self, value: Any, depth: int) -> bool:
        self.left -= 1
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, int):
            return value.bit_length() <= MAX_INT_BITS
        if isinstance(value, float):
            return math.isfinite(value)
        if isinstance(value, str):
            return value.isascii() or _SURROGATE.search(value) is None
        if depth >= MAX_DEPTH or self.left < 0:
            return False
        if isinstance(value, dict):
            return all(
                isinstance(k, str) and self.check(k, depth + 1) and self.check(v, depth + 1)
                for k, v in value.items()
            )
        if isinstance(value, (list, tuple)):
            return all(self.check(v, depth + 1) for v in value)
        return False


def bytes_text(data: bytes) -> str:
    """Text of ``data``: itself when it is UTF-8, else its size and a hex preview."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        more = "..." if len(data) > BYTES_PREVIEW else ""
        return f"<{len(data):,} bytes: {data[:BYTES_PREVIEW].hex()}{more}>"


def _valid_text(value: str) -> str:
    """``value`` with lone surrogates replaced (``isascii``: a fast scan that rules them out)."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


class _Converter:
    """One conversion: the character budget left is shared by every string of the value."""

    def __init__(self, max_chars: int | None, max_total: int | None, max_values: int):
        self.max_chars = _UNLIMITED if max_chars is None else max_chars
        self.left = _UNLIMITED if max_total is None else max_total
        self.values_left = max_values
        # ids of the containers being converted: the current value's ancestors
        self.inside: set[int] = set()
        self.texts: dict[int, tuple[str, str]] = {}  # id -> (a long string, its valid text)

    @property
    def spent(self) -> bool:
        """Whether the characters or the values of the budget are used up."""
        return self.left <= 0 or self.values_left <= 0

    def convert(self, value: Any, depth: int) -> Any:
        self.values_left -= 1
        if value is None or isinstance(value, bool):
            self.left -= 5
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, enum.Enum):
            return self.convert(value.value, depth)
        if isinstance(value, int):
            self.left -= 8
            return (
                int(value)
                if value.bit_length() <= MAX_INT_BITS
                else f"<integer of {value.bit_length():,} bits>"
            )
        if isinstance(value, float):
            self.left -= 8
            return float(value) if math.isfinite(value) else None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self.text(bytes_text(bytes(value)))
        if isinstance(value, np.generic):
            return self.convert(value.item(), depth)
        if depth >= MAX_DEPTH:
            return self.text(f"<nested deeper than {MAX_DEPTH} levels>")
        if id(value) in self.inside:
            return self.text(CYCLE)
        self.inside.add(id(value))
        try:
            return self.container(value, depth)
        finally:
            self.inside.discard(id(value))

    def container(self, value: Any, depth: int) -> Any:
        """A mapping, dataclass, array, list, tuple or set as JSON data; anything else its text."""
        if isinstance(value, Mapping):
            return self.mapping(value.items(), len(value), depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            return self.mapping(
                ((f.name, getattr(value, f.name)) for f in fields), len(fields), depth
            )
        if isinstance(value, np.ndarray):
            return self.items(
                value if value.ndim else [value.item()], len(value) if value.ndim else 1, depth
            )
        if isinstance(value, (list, tuple, Set)):
            return self.items(value, len(value), depth)
        if isinstance(value, numbers.Integral):
            return self.convert(int(value), depth)
        if isinstance(value, (numbers.Real, decimal.Decimal)):
            return self.convert(float(value), depth)
        try:
            text = str(value)
        except Exception:  # noqa: BLE001 - any object: its failure to print must not fail the row
            text = f"<unprintable {type(value).__name__}>"
        return self.text(text)

    def text(self, value: str) -> str:
        keep = min(self.max_chars, max(self.left, 0))
        if len(value) > keep:
            value = f"{value[: int(keep)]}...[cut: {len(value) - int(keep):,} more characters]"
        self.left -= len(value) + 2
        if len(value) < LONG_TEXT:
            return _valid_text(value)
        # a long string held many times over (one cell in every step) is scanned once
        known = self.texts.get(id(value))
        if known is None:
            # the string kept alive: its id stays its own
            known = self.texts[id(value)] = (
                value,
                _valid_text(value),
            )
        return known[1]

    def items(self, values: Any, size: int, depth: int) -> list[Any]:
        out: list[Any] = []
        for i, item in enumerate(values):
            # The marker is a mapping among mappings (steps, evidence), so readers of those still
            # read it.
            if self.spent:
                marker = f"...[cut: {size - i:,} more items]"
                out.append({"...": marker} if out and isinstance(out[-1], dict) else marker)
                break
            out.append(self.convert(item, depth + 1))
        self.left -= 2
        return out

    def mapping(self, pairs: Any, size: int, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, (key, item) in enumerate(pairs):
            if self.spent:
                out["..."] = f"[cut: {size - i:,} more entries]"
                break
            name = self.text(
                key
                if isinstance(key, str)
                else bytes_text(key)
                if isinstance(key, bytes)
                else str(self.convert(key, depth + 1))
            )
            # the key first: it is spent from the budget before its value
            out[name] = self.convert(item, depth + 1)
        self.left -= 2
        return out
