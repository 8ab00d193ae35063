"""Validated strategy configs: every option is checked when the config is made.

A strategy config is a frozen dataclass deriving from :class:`StrategyConfig`. Each field
is checked against its annotation (``int``, ``float``, ``bool``, ``str``, ``Literal``
choices, ``X | None``, mappings, tuples) and against the bounds in its metadata
(``option(5, min=1)``), so a negative chunk size or a misspelt mode is a clear
``ConfigError`` naming the option before the first call, never a quiet default.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args, get_origin

from longctx.retrieval.contract.errors import ConfigError as ConfigError
from longctx.retrieval.redaction import redact_value, register_options


def option(
    default: Any = dataclasses.MISSING,
    *,
    min: float | None = None,
    max: float | None = None,
    source: str | None = None,
    **meta: Any,
) -> Any:
    """A config field with bounds and the source of its default (cited in docs and ``--help``).

    Args:
        default: The paper's value.
        min: Inclusive lower bound, checked when the config is made.
        max: Inclusive upper bound, checked likewise.
        source: Where the default comes from (paper, table, file).
    """
    metadata = {
        k: v for k, v in (("min", min), ("max", max), ("source", source)) if v is not None
    } | meta
    if isinstance(default, (dict, list, set)):
        value = default
        return field(default_factory=lambda: type(value)(value), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, kw_only=True)
class StrategyConfig:
    """Base of every strategy config: validates each field on construction and on ``replace``."""

    def __post_init__(self) -> None:
        validate(self)
        self.check()
        # keys in options never reach an output
        register_options({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def check(self) -> None:
        """Cross-field rules of a strategy (override; raise :class:`ConfigError`)."""


#: A strategy's config class: ``Strategy[RagConfig]``, ``StrategyCosts[RagConfig]`` check what reads
#: it against it.
ConfigT = TypeVar("ConfigT", bound=StrategyConfig)


def validate(config: Any) -> None:
    """Check every field of a dataclass config against its annotation and bounds."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        where = f"{type(config).__name__}.{f.name}"
        if not _matches(value, hints.get(f.name, Any)):
            raise ConfigError(
                f"Option {f.name!r} ({where}) must be {_describe(hints.get(f.name, Any))}, got "
                f"{value!r}"
            )
        low, high = f.metadata.get("min"), f.metadata.get("max")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, float) and math.isnan(value):
                raise ConfigError(f"Option {f.name!r} ({where}) must be a number, got NaN")
            if low is not None and value < low:
                raise ConfigError(f"Option {f.name!r} ({where}) must be >= {low}, got {value!r}")
            if high is not None and value > high:
                raise ConfigError(f"Option {f.name!r} ({where}) must be <= {high}, got {value!r}")


#: The scalar hints and the check each takes (a ``bool`` is neither an ``int`` nor a ``float``).
_SCALARS: dict[Any, Callable[[Any], bool]] = {
    type(None): lambda v: v is None,
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
}


def _matches(value: Any, hint: Any) -> bool:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if hint in _SCALARS:
        return _SCALARS[hint](value)
    if origin in (Mapping, dict, typing.Mapping) or hint in (Mapping, dict):
        return isinstance(value, Mapping)
    if origin in (tuple, Sequence, list):
        return isinstance(value, (tuple, list)) and _matches_items(value, args)
    return isinstance(value, origin or hint) if isinstance(origin or hint, type) else True


def _matches_items(value: tuple[Any, ...] | list[Any], args: tuple[Any, ...]) -> bool:
    """Whether the items of a sequence match the ``X`` of ``tuple[X, ...]`` (the items of a
    ``list[X]`` or a fixed-length tuple are not checked)."""
    return (
        not args
        or args[-1] is Ellipsis
        and all(_matches(v, args[0]) for v in value)
        or args[-1] is not Ellipsis
    )


def _describe(hint: Any) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if hint is type(None):
        return "None"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )


def redact_secrets(value: Any) -> Any:
    """``value`` with every secret-named entry of every nested mapping replaced by ``***``, and
    every string through :func:`longctx.retrieval.redaction.redact` (known keys, URL
    credentials)."""
    return redact_value(value, by_name=True)
