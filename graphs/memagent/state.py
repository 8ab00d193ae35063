"""MemAgent's run context and checkpointed state, and the payload of its ``Send`` tasks (a typed
task per question and chunk, never a loose dict)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Required, TypedDict

from longctx.graphs.memagent.config import MemAgentConfig
from longctx.graphs.plugin.api import MemoryTrace, StrategyContext, add_usage


@dataclass(frozen=True)
class MemAgentContext(StrategyContext[MemAgentConfig]):
    """The run context plus the corpus stream cut into chunks and the memory trace."""

    chunks: tuple[str, ...] = ()
    chunk_sizes: tuple[int, ...] = ()
    trace: MemoryTrace | None = None
    thread: str = ""
    layout: str = "titled"


def _merge(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    return {**(a or {}), **(b or {})}


def _sum_counts(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int]:
    a, b = a or {}, b or {}
    return {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}


class SettledQuestion(TypedDict, total=False):
    """A question as the checkpointed state holds it: its text and what its final call sends (plain
    values, so a checkpoint stores it; runs checkpointed before a key existed lack it, so readers
    default).

    Attributes:
        problem: The question's text (official: ``item["input"].strip()``).
        instruction: The benchmark's output-format instruction (``None``: MemAgent's own).
        max_new_tokens: The final call's answer budget.
        temperature: The final call's temperature.
        top_p: The final call's top-p (``None``: not sent).
        stop: The final call's stop sequences.
    """

    problem: Required[str]
    instruction: Required[str | None]
    max_new_tokens: int
    temperature: float
    top_p: float | None
    stop: list[str] | None


class MemoryTask(TypedDict):
    """The payload of one ``update_memory`` / ``final_answer`` ``Send``: one question's memory at
    one chunk."""

    qi: str
    question: SettledQuestion
    memory: str
    chunk: int


class MemAgentState(TypedDict, total=False):
    """Checkpointed state: small and fixed-size per question (snapshots live in the trace). Not an
    :class:`~graphs.plugin.answer_state.AnswerState`: it answers many questions at once, and the run
    path reads each question's answer through :func:`collect` (a
    :class:`~graphs.plugin.answer_state.BatchAnswer`)."""

    questions: list[SettledQuestion]
    n_chunks: int
    layout: str
    chunk_index: int
    memories: Annotated[dict[str, str], _merge]
    finals: Annotated[dict[str, str], _merge]
    cuts: Annotated[dict[str, int], _sum_counts]
    usage: Annotated[dict[str, dict[str, Any]], add_usage]
    continued_from: (
        int  # documents of the earlier corpus whose final memories this run started from
    )
