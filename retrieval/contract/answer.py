"""What a strategy returns: ``Answer``, its ``Evidence``, ``Usage`` and ``Step`` records.

Part of the answer contract (:mod:`longctx.retrieval.contract`): standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from longctx.retrieval.contract.question import Question

#: The counts a resumed run's usage splits into this call's and the earlier
#: calls' (:meth:`Usage.since`).
SPLIT_FIELDS = (
    "llm_calls",
    "cached_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
)


@dataclass
class Usage:
    """What an answer cost; the one usage schema (answers, graph states, result rows).

    The call counts and tokens are this call's: what this call of ``answer`` / ``answer_many`` sent
    (count them, sum them over rows, price them: nothing is counted twice). A checkpointed run
    (MemAgent) resumed or replayed by this call also spent calls in earlier calls of ``answer``:
    those are the ``earlier_*`` fields, never sent now, and ``run_*`` (the two added) is what the
    whole run cost across every call that ran it.

    Attributes:
        llm_calls: Chat-model calls this call sent that returned.
        failed_calls: Chat-model calls that raised (after the client's own retries).
        prompt_tokens: Input tokens as reported by the model (or counted, see ``estimated``).
        completion_tokens: Output tokens as reported by the model (or counted).
        seconds: The answer's own wall time, retrieval included, waiting for a model shared
            with concurrent answers excluded (a batch's time is shared out over its answers,
            so sums over answers add up to the batch).
        index_seconds: Part of ``seconds`` spent building or loading the index.
        queued_seconds: Wall time spent waiting for a model busy with other answers (the
            embedded model serves one call at a time), or for an index another answer is
            building (counted once, as that answer's ``index_seconds``); not part of ``seconds``.
        estimated: True when some call reported no usage and its tokens were counted.
        cached_calls: Calls answered from the on-disk LLM cache (free: not in the other counts).
        cached_prompt_tokens: Part of ``prompt_tokens`` the server reported as read from its prompt
            cache (a prefix it had seen: OpenAI's ``prompt_tokens_details.cached_tokens`` and the
            vendors' other names, or the prefix the embedded model kept); billed at the cached rate.
        earlier_llm_calls: Calls of the same checkpointed run made by earlier calls of ``answer``
            (0 unless this answer resumed or replayed one); not sent by this call.
        earlier_cached_calls: Cache replays of those earlier calls.
        earlier_prompt_tokens: Their input tokens.
        earlier_cached_prompt_tokens: The part of those the server read from its prompt cache.
        earlier_completion_tokens: Their output tokens.
        rerank_calls: Rerank requests (or local cross-encoder calls) that returned.
        rerank_failed_calls: Rerank attempts that failed (each retry of a timeout or 5xx
            counts one).
        rerank_tokens: Tokens the rerank server reported (or the cross-encoder's tokenizer counted).
        index_llm_calls: Part of ``llm_calls`` spent building something reused across questions
            (RAPTOR's tree summaries, structured's per-document extraction): non-zero only on the
            answer that paid for the build, zero on those that reused it.
        index_prompt_tokens: Part of ``prompt_tokens`` sent by those index-time calls.
        index_completion_tokens: Part of ``completion_tokens`` they received.
    """

    llm_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0
    estimated: bool = False
    cached_calls: int = 0
    queued_seconds: float = 0.0
    cached_prompt_tokens: int = 0
    earlier_llm_calls: int = 0
    earlier_cached_calls: int = 0
    earlier_prompt_tokens: int = 0
    earlier_cached_prompt_tokens: int = 0
    earlier_completion_tokens: int = 0
    rerank_calls: int = 0
    rerank_failed_calls: int = 0
    rerank_tokens: int = 0
    index_llm_calls: int = 0
    index_prompt_tokens: int = 0
    index_completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens (this call's)."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def run_llm_calls(self) -> int:
        """Calls of the whole run: this call's and those of the earlier calls it resumed."""
        return self.llm_calls + self.earlier_llm_calls

    @property
    def run_prompt_tokens(self) -> int:
        """Input tokens of the whole run (this call's and the earlier calls')."""
        return self.prompt_tokens + self.earlier_prompt_tokens

    @property
    def run_completion_tokens(self) -> int:
        """Output tokens of the whole run (this call's and the earlier calls')."""
        return self.completion_tokens + self.earlier_completion_tokens

    def since(self, earlier: Usage) -> Usage:
        """This usage, a running total of a checkpointed run, split at ``earlier`` (the total when
        this call began): the counts become what was spent since, and ``earlier``'s counts the
        ``earlier_*`` fields."""
        return replace(
            self,
            **{name: getattr(self, name) - getattr(earlier, name) for name in SPLIT_FIELDS},
            **{f"earlier_{name}": getattr(earlier, name) for name in SPLIT_FIELDS},
        )

    def __add__(self, other: Usage) -> Usage:
        """Field-wise sum (``estimated`` if either is)."""
        return Usage(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in fields(self)
                if f.name != "estimated"
            },
            estimated=self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``total_tokens`` (this call's) and ``run_llm_calls`` /
        ``run_prompt_tokens`` / ``run_completion_tokens``."""
        return {
            **asdict(self),
            "total_tokens": self.total_tokens,
            "run_llm_calls": self.run_llm_calls,
            "run_prompt_tokens": self.run_prompt_tokens,
            "run_completion_tokens": self.run_completion_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in names})


class Step(dict[str, Any]):
    """One graph node's record in ``Answer.steps``: ``{"node": <graph node name>, **facts}``.

    A dict, so it is JSON as it stands and survives checkpoints; the node name is
    required and always the graph node that wrote it (``retrieve``, ``update_memory``,
    ``route``, ...), so a reader filters steps by ``step.node``.
    """

    def __init__(self, node: str | Mapping[str, Any] | Iterable[tuple[str, Any]], /, **facts: Any):
        if isinstance(node, str):
            super().__init__(node=node, **facts)
        else:  # a mapping or key/value pairs, as dict() takes (copies, dataclasses.asdict)
            super().__init__(node, **facts)
        if not isinstance(self.get("node"), str) or not self["node"]:
            raise ValueError(
                f"A step needs the name of the graph node that wrote it, got {dict(self)!r}"
            )

    @property
    def node(self) -> str:
        """The graph node that wrote this step."""
        node: str = self["node"]  # checked to be a non-empty string when the step was made
        return node

    @classmethod
    def coerce(cls, data: Mapping[str, Any]) -> Step:
        """A :class:`Step` from a mapping with a ``node`` key (checkpoints give plain
        dicts back)."""
        return data if isinstance(data, Step) else cls(data)


@dataclass(frozen=True)
class Evidence:
    """A piece of the corpus the answer was based on.

    ``components``: where retrieval fused or reranked, each stage's view of this chunk, name
    -> ``{"rank", "score"}`` (``bm25``, ``dense``, ``rerank``...; ``None`` where a stage did
    not return it).
    """

    doc_id: str
    title: str
    text: str
    score: float | None = None
    chunk_id: int | None = None
    rank: int | None = None
    components: dict[str, dict[str, Any]] | None = None


@dataclass
class Answer:
    """The result of ``longctx.agents.answer``: the same for every strategy.

    Attributes:
        answer: Final answer text (the model's reply, stripped; benchmarks extract their format).
        raw: The text a benchmark scores: the model's final reply (a multi-step strategy's
            final call only, never its transcript), or, where the strategy's own paper defines
            how its reply is read (MemAgent's "the answer is" extraction), what that keeps; the
            whole reply is then in the last step's ``reply``.
        evidence: What the answer was based on, best first.
        usage: Calls, tokens and seconds of this answer alone.
        steps: One :class:`Step` per graph node that ran (retrievals, routes, memories...).
        strategy: Registry name of the strategy that answered.
        question: The question as asked.
        config: The effective strategy config (preset, model, secrets redacted).
        messages: The messages of the answer's last model call (``role``, ``content``; each
            content kept up to 24,000 characters, head and tail): the prompt that produced it.
            An assistant turn that called tools adds ``tool_calls`` (``id``, ``name``,
            ``args``), a tool result ``tool_call_id``, ``name`` and ``status``.
            Empty for batched strategies (MemAgent's final prompts are in its steps).
        stopped: Why the run stopped before finishing, or ``None`` when it finished:
            ``"budget"`` when it reached its :class:`~graphs.metering.budget.Budget` (the answer
            then holds what was done; MemAgent's checkpoint is kept, so a larger budget resumes).
    """

    answer: str
    raw: str
    evidence: list[Evidence]
    usage: Usage
    steps: list[Step]
    strategy: str
    question: Question
    config: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for result files)."""
        return {
            "answer": self.answer,
            "raw": self.raw,
            "evidence": [asdict(e) for e in self.evidence],
            "usage": self.usage.to_dict(),
            "steps": [dict(s) for s in self.steps],
            "strategy": self.strategy,
            "question": self.question.to_dict(),
            "config": self.config,
            "messages": self.messages,
            "stopped": self.stopped,
        }
