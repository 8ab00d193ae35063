"""PAI's state and the payloads its ``Send`` fan-outs carry (each a typed task, not a loose
dict)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from longctx.graphs.plugin.api import AnswerState, Chunk, Hit


class SubQuestion(TypedDict):
    """A sub-question, and for PAI the property it asks for (``metric`` and ``subject``; ``None``
    for PAI-)."""

    text: str
    metric: str | None
    subject: str | None


class JudgedPair(TypedDict):
    """One (sub-question, chunk) pair of a judge task: the sub-question's index and text."""

    sq: int
    sub_question: str


class JudgeTask(TypedDict):
    """The payload of one ``judge`` ``Send``: a candidate chunk and every pair judged on it."""

    hit: Hit
    pairs: list[JudgedPair]
    tool_mode: str


class SubAnswerTask(TypedDict):
    """The payload of one ``sub_answer`` ``Send``: a sub-question and its kept chunks (document
    order)."""

    sq: int
    sub_question: SubQuestion
    chunks: list[Chunk]


class PaiState(AnswerState, total=False):
    """What evolves during one PAI answer (keys written by ``Send`` branches have reducers)."""

    tool_mode: str
    properties: list[dict[str, str]]
    sub_questions: list[SubQuestion]
    mode: str
    candidates: list[list[Hit]]
    judgments: Annotated[list[dict[str, Any]], operator.add]
    kept: list[list[Chunk]]
    sub_answers: Annotated[list[dict[str, Any]], operator.add]
