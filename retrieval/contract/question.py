"""The question and the benchmark protocol that travels with it: ``Question``, ``Protocol``.

Part of the answer contract (:mod:`longctx.retrieval.contract`): standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from longctx.retrieval.contract.errors import OptionError


@dataclass(frozen=True, kw_only=True)
class Protocol:
    """What a benchmark's official code sends for one item; every strategy follows it.

    A benchmark loader attaches one to each question, so strategies honour the protocol
    without knowing the benchmark: the final call of every strategy uses
    ``max_new_tokens`` (intermediate calls keep the strategy's own budgets); the
    full-context baseline sends ``prompt()`` middle-truncated to the input budget; RAG
    with ``assembly="benchmark"`` fills ``prompt(context)`` or ``rag_prompt(chunks)``.

    Attributes:
        benchmark: The benchmark's registry name.
        max_new_tokens: The official answer budget (LongBench ``dataset2maxlen``, ...).
        max_input_tokens: An absolute input budget of the official loop (LongBench v2
            ``model2maxlen``: 120,000), capped by the model's own window.
        window_reserve: Tokens the official loop keeps free of the model window for the
            answer (LongBench v1 / LV-Eval ``model2maxlen`` = window - 500).
        temperature: The official sampling temperature of the final call (``None``: the strategy's).
        chat_template: ``False`` where the official loop sends a raw completion (LongBench v1 trec,
            triviaqa, samsum, lsht, lcc, repobench-p); chat endpoints still get one user message.
        stop: Stop sequences of the official final call (LongBench v1 samsum: ``"\n"``, its
            ``eos_token_id`` list); ``None``: none.
        prompt: ``prompt(context=None) -> str``, the official prompt around ``context``
            (``None``: the item's own full context).
        rag_prompt: ``rag_prompt(chunks) -> str``, the official RAG prompt around retrieved chunks.
        reasoning_max_new_tokens: Budget of the official prompt's call when ``answer_prompt``
            follows it (LongBench v2 CoT: 1,024); ``max_new_tokens`` is then the answer call's.
        answer_prompt: ``answer_prompt(reasoning) -> str``, the official second call around the
            first reply (LongBench v2 CoT ``0shot_cot_ans.txt``), whose reply is scored. Strategies
            that send the benchmark's own prompt (full context, RAG's ``benchmark`` assembly,
            Self-Route) make it.
        rag_order: The chunk order of the official RAG prompt, which RAG's ``benchmark`` assembly
            follows: ``"document"`` (LongBench v2 ``pred.py --rag`` sorts by ``c_idx``); ``None``:
            the strategy's own ``order``.
        system: The official system turn sent before the benchmark's own prompt (MemoryAgentBench's
            agents); ``None``: the prompt is the only turn.
    """

    benchmark: str
    max_new_tokens: int | None = None
    max_input_tokens: int | None = None
    window_reserve: int | None = None
    temperature: float | None = None
    chat_template: bool = True
    stop: tuple[str, ...] | None = None
    rag_order: Literal["document", "rank"] | None = None
    reasoning_max_new_tokens: int | None = None
    system: str | None = None
    prompt: Callable[..., str] | None = field(default=None, repr=False, compare=False)
    rag_prompt: Callable[[Sequence[str]], str] | None = field(
        default=None, repr=False, compare=False
    )
    answer_prompt: Callable[[str], str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The protocol's settings, JSON-ready (the prompt builders are named, not dumped)."""
        data = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("prompt", "rag_prompt", "answer_prompt")
        }
        if (
            data["system"] is None
        ):  # only where a benchmark sends one, so other protocols read as before
            del data["system"]
        return data | {
            "official_prompt": self.prompt is not None,
            "official_rag_prompt": self.rag_prompt is not None,
            "official_answer_prompt": self.answer_prompt is not None,
        }


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
        protocol: The benchmark's official settings for this item (``None`` outside benchmarks).
    """

    text: str
    choices: Mapping[str, str] | None = None
    instruction: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    protocol: Protocol | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("The question is empty.")

    def render(self) -> str:
        """The question text followed by its lettered choices, if any."""
        if not self.choices:
            return self.text
        options = "\n".join(f"({letter}) {option}" for letter, option in self.choices.items())
        return f"{self.text}\nChoices:\n{options}"

    def answer_budget(self, default: int) -> int:
        """Max new tokens of a strategy's final call: the protocol's, else ``default``."""
        return (
            self.protocol.max_new_tokens
            if self.protocol and self.protocol.max_new_tokens
            else default
        )

    def answer_temperature(self, default: float) -> float:
        """Temperature of a strategy's final call: the protocol's, else ``default``."""
        return (
            self.protocol.temperature
            if self.protocol and self.protocol.temperature is not None
            else default
        )

    def answer_stop(self) -> list[str] | None:
        """Stop sequences of a strategy's final call: the protocol's, else none."""
        return list(self.protocol.stop) if self.protocol and self.protocol.stop else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "text": self.text,
            "choices": dict(self.choices) if self.choices else None,
            "instruction": self.instruction,
            "metadata": dict(self.metadata),
            "protocol": self.protocol.to_dict() if self.protocol else None,
        }


def as_question(question: str | Question) -> Question:
    """Accept a plain string or a :class:`Question` at the API boundary."""
    if isinstance(question, Question):
        return question
    if isinstance(question, str):
        return Question(text=question)
    raise OptionError(f"question must be a str or Question, got {type(question).__name__}")
