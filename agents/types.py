"""The one answer contract every strategy returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from graphs.types import Question


@dataclass
class Usage:
    """What an answer cost.

    Attributes:
        llm_calls: Chat-model calls that returned.
        failed_calls: Chat-model calls that raised (after the client's own retries).
        prompt_tokens: Input tokens as reported by the model (or counted, see ``estimated``).
        completion_tokens: Output tokens as reported by the model (or counted).
        seconds: Wall time of the whole answer, retrieval included.
        index_seconds: Part of ``seconds`` spent building or loading the index.
        estimated: True when some call reported no usage and its tokens were counted with cl100k.
        cached_calls: Calls answered from the on-disk LLM cache (free: not in the other counts).
    """

    llm_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0
    estimated: bool = False
    cached_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            failed_calls=self.failed_calls + other.failed_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
            index_seconds=self.index_seconds + other.index_seconds,
            estimated=self.estimated or other.estimated,
            cached_calls=self.cached_calls + other.cached_calls,
        )


@dataclass(frozen=True)
class Evidence:
    """A piece of the corpus the answer was based on."""

    doc_id: str
    title: str
    text: str
    score: float | None = None
    chunk_id: int | None = None
    rank: int | None = None


@dataclass
class Answer:
    """The result of :func:`agents.answer`.

    Attributes:
        answer: Final answer text (the model's reply, stripped; benchmarks extract their format).
        raw: The model's unprocessed final reply.
        evidence: What the answer was based on, best first.
        usage: Calls, tokens and seconds.
        steps: Per-node trace entries (retrievals, truncation, routes, memory snapshots).
        strategy: Registry name of the strategy that answered.
        question: The question as asked.
        config: The strategy config that ran, as a dict.
    """

    answer: str
    raw: str
    evidence: list[Evidence]
    usage: Usage
    steps: list[dict[str, Any]]
    strategy: str
    question: Question
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for result files)."""
        data = asdict(self)
        data["usage"]["total_tokens"] = self.usage.total_tokens
        data["question"] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data["question"].items()}
        return data
