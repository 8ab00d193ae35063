"""What evolves during one structured answer: the graph's state (its nodes live in several
modules)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from longctx.graphs.plugin.api import AnswerState, Table


class StructuredState(AnswerState, total=False):
    """What evolves during one answer (``extractions`` is written by ``Send`` branches)."""

    schema: dict[str, Any]
    tool_mode: str
    cache_key: str
    window: int
    loaded: dict[int, list[dict[str, Any]]]
    pending: list[int]
    fingerprints: dict[int, str]
    split: list[int]
    group_size: int
    extractions: Annotated[list[dict[str, Any]], operator.add]
    table: Table
    sql: str
    result: dict[str, Any] | None
    query_error: str | None


__all__ = ["StructuredState"]
