"""MemoryAgentBench's released records, read and checked: one context with its many questions.

The hub dataset ``ai-hyz/MemoryAgentBench`` has four splits (``Accurate_Retrieval``,
``Test_Time_Learning``, ``Long_Range_Understanding``, ``Conflict_Resolution``); each record is
``{context, questions, answers, metadata: {source, question_ids, question_types, qa_pair_ids,
keypoints, ...}}`` and ``metadata.source`` names its sub-dataset (the ``sub_dataset`` of the
official configs). Files are read from ``<root>/<Split>.{jsonl,json,parquet}`` or the hub's own
layout ``<root>/data/<Split>-*.parquet``; a malformed record is refused with one line naming the
file, the record and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BenchmarkDataError,
    find_file,
    load_from_hub,
    read_records,
)
from longctx.retrieval.extras import install_hint

HUB_REPO = "ai-hyz/MemoryAgentBench"
SPLITS = (
    "Accurate_Retrieval",
    "Test_Time_Learning",
    "Long_Range_Understanding",
    "Conflict_Resolution",
)


@dataclass(frozen=True)
class QA:
    """One question of a context: the question text, its gold answer(s) as stored, and its
    per-question metadata."""

    question: str
    answer: Any
    index: int
    question_id: str | None = None
    question_type: str | None = None
    qa_pair_id: str | None = None


@dataclass(frozen=True)
class Item:
    """One released record: the context every question is asked over, and its questions."""

    source: str
    context: str
    qas: tuple[QA, ...]
    metadata: Mapping[str, Any]
    where: str


def split_files(root: Path, split: str) -> list[Path]:
    """The local files of ``split``: ``<root>/<split>.*``, else the hub's shards
    ``<root>/data/<split>-*.parquet``, or ``<root>/<split>-*.parquet`` when ``root`` is
    that ``data/``."""
    single = find_file(root, split)
    if single is not None:
        return [single]
    for folder in (root / "data", root):
        shards = sorted(folder.glob(f"{split}-*.parquet")) if folder.is_dir() else []
        if shards:
            return shards
    return []


def read_split(root: Path, split: str, *, hub: bool) -> list[tuple[str, dict[str, Any]]]:
    """``(where, record)`` pairs of one split from disk, else (``hub``) from the hub."""
    files = split_files(root, split)
    if files:
        return [(f"{f}: record {i}", r) for f in files for i, r in enumerate(read_records(f))]
    expected = root / f"{split}.{{jsonl,json,parquet}}"
    if not hub:
        raise BenchmarkDataError(
            f"MemoryAgentBench {split}: no local file {expected} (or {split}-*.parquet in "
            f"{root} or "
            f"{root / 'data'}): download the hub dataset {HUB_REPO} (its data/ folder will "
            "do), or let "
            f"the loader fetch it with the 'hub' extra ({install_hint('hub')}); see "
            "docs/benchmarks-data.md."
        )
    records = load_from_hub(
        HUB_REPO, None, split, what=f"MemoryAgentBench {split}", expected=expected
    )
    return [(f"{HUB_REPO} {split}: record {i}", r) for i, r in enumerate(records)]


def _as_list(value: Any) -> list[Any]:
    """``_ensure_field_is_list``: a list as is, a non-empty value wrapped, an empty
    one as ``[]``."""
    if isinstance(value, list):
        return value
    return [value] if value else []


def _field(where: str, name: str, problem: str) -> BenchmarkDataError:
    return BenchmarkDataError(f"MemoryAgentBench {where}: field {name!r} {problem}")


def _answer_ok(answer: Any) -> bool:
    if isinstance(answer, str):
        return True
    return (
        isinstance(answer, list)
        and bool(answer)
        and all(
            isinstance(a, str) or (isinstance(a, list) and all(isinstance(b, str) for b in a))
            for a in answer
        )
    )


def parse_item(record: Any, where: str) -> Item:
    """One record checked and split into its questions, paired as
    ``ConversationCreator`` pairs them.

    Several questions and several answers: pair by position (``zip``, as official); otherwise
    one question (the first, or empty) with the whole answer list as its gold.
    """
    if not isinstance(record, Mapping):
        raise BenchmarkDataError(
            f"MemoryAgentBench {where}: a record must be an object, got {type(record).__name__}"
        )
    context = record.get("context")
    if not isinstance(context, str) or not context.strip():
        raise _field(where, "context", "must be a non-empty string")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise _field(where, "metadata", f"must be an object, got {type(metadata).__name__}")
    source = metadata.get("source")
    if not isinstance(source, str) or not source.strip():
        raise _field(where, "metadata.source", "must name the sub-dataset (e.g. 'ruler_qa1_197K')")
    questions, answers = _as_list(record.get("questions")), _as_list(record.get("answers"))
    if not all(isinstance(q, str) for q in questions):
        raise _field(where, "questions", "must be a string or a list of strings")
    if not answers or not all(_answer_ok(a) for a in answers):
        raise _field(
            where, "answers", "must be a non-empty list of strings (or of lists of strings)"
        )
    lists = {
        k: _as_list(metadata.get(k)) for k in ("question_ids", "question_types", "qa_pair_ids")
    }

    def at(key: str, i: int) -> str | None:
        values = lists[key]
        return str(values[i]) if i < len(values) and values[i] is not None else None

    if len(questions) > 1 and len(answers) > 1:
        pairs = list(zip(questions, answers))
    else:
        pairs = [(questions[0] if questions else "", answers)]
    qas = tuple(
        QA(q, a, i, at("question_ids", i), at("question_types", i), at("qa_pair_ids", i))
        for i, (q, a) in enumerate(pairs)
    )
    return Item(
        source=source.strip(), context=context, qas=qas, metadata=dict(metadata), where=where
    )
