"""Types every strategy graph shares: the question and the run context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from retrieval import Corpus, Index


@dataclass(frozen=True, kw_only=True)
class Question:
    """A question, optionally multiple-choice, with the output format the benchmark wants.

    Attributes:
        text: The question itself.
        choices: Multiple-choice options keyed by letter, e.g. ``{"A": "...", "B": "..."}``.
        instruction: Output-format instruction set by the benchmark (e.g. ``Format your
            response as follows: "The correct answer is (insert answer here)".``); strategies
            append it verbatim and never invent their own when it is given.
        metadata: Free-form fields (sample id, benchmark) carried into traces.
    """

    text: str
    choices: Mapping[str, str] | None = None
    instruction: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("The question is empty.")

    def render(self) -> str:
        """The question text followed by its lettered choices, if any."""
        if not self.choices:
            return self.text
        options = "\n".join(f"({letter}) {option}" for letter, option in self.choices.items())
        return f"{self.text}\nChoices:\n{options}"


def as_question(question: str | Question) -> Question:
    """Accept a plain string or a :class:`Question` at the API boundary."""
    if isinstance(question, Question):
        return question
    if isinstance(question, str):
        return Question(text=question)
    raise TypeError(f"question must be a str or graphs.Question, got {type(question).__name__}")


@dataclass(frozen=True)
class StrategyContext:
    """Immutable per-run dependencies injected into every node (LangGraph ``context_schema``).

    Attributes:
        llm: The chat model.
        config: The strategy's config object.
        corpus: The corpus being answered over.
        index: The retrieval index, for strategies that retrieve.
        cache_dir: Root of the on-disk cache (``None`` = ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``), for strategies that checkpoint a sub-run.
    """

    llm: BaseChatModel
    config: Any
    corpus: Corpus
    index: Index | None = None
    cache_dir: Path | None = None
