"""The evidence-ceiling contract: what a strategy declares so its ceiling is measured without a model.

A strategy registers an :class:`EvidenceCeiling` (``STRATEGIES.register(..., ceiling=...)``):
the rule that says how much of a question's known evidence can reach its final model call,
computed with the strategy's own retrieval / packing / truncation code and no model.
``experiments.ceilings`` loops over questions and strategies, reads these rules from the
registry and prints the tables; the rules themselves live in each strategy's package
(``graphs/<name>/ceiling.py``). A ceiling is an upper bound on accuracy, not an accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langgraph.runtime import Runtime

from graphs.context import StrategyContext
from graphs.retrieval_service import RetrievalService
from retrieval import tokens
from retrieval.contract import Corpus


@dataclass(frozen=True)
class CeilingItem:
    """One question with its evidence: documents, and (synthetic corpora) records and gold sub-questions."""

    sample_id: str
    corpus: Corpus
    question: Any
    evidence: tuple[str, ...]
    difficulty: str | None = None
    records: tuple[Any, ...] | None = None
    sub_questions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Reach:
    """How much of one question's evidence reaches the final call (in the rule's unit: documents, records...)."""

    reached: int
    total: int

    @property
    def share(self) -> float:
        return 1.0 if self.total == 0 else self.reached / self.total

    @property
    def complete(self) -> bool:
        return self.reached >= self.total


@dataclass
class CeilingEnv:
    """What every rule gets besides its config: where indexes are cached, the tokenizer, options."""

    cache_dir: str | Path | None = None
    encode: Callable[[str], list[int]] = tokens.encode
    decode: Callable[[list[int]], str] = tokens.decode
    gold_sub_questions: bool = False


class SkipCeiling(Exception):
    """The rule does not apply to these questions (e.g. it needs records a benchmark does not have)."""


@dataclass(frozen=True, kw_only=True)
class EvidenceCeiling:
    """A strategy's LLM-free evidence-ceiling rule; subclasses implement :meth:`reach` and :meth:`describe`.

    Attributes:
        rank: Row order in ceiling tables (lower first; ties by name). The built-ins use 10..80;
            a plug-in without a rank comes after them.
        unit: What evidence is counted in (``documents``, or ``records`` for a memory rule).
    """

    rank: int = 1000
    unit: str = "documents"

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        """How much of ``item``'s evidence can reach the final call under ``cfg``.

        Raises:
            SkipCeiling: The rule cannot be applied to this question.
        """
        raise NotImplementedError

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        """The rule applied under ``cfg``, in one line (``corpus_tokens``: of the first question's corpus)."""
        raise NotImplementedError

    def detail(self, cfg: Any, items: Sequence[CeilingItem], reaches: Sequence[Reach], env: CeilingEnv) -> dict[str, Any]:
        """Rule-specific extras for the ceiling's ``detail`` (none by default)."""
        return {}


class RecordLike(Protocol):
    """A fact a question needs: an entity's field in a year, with its value (``experiments.synth.records.Record``)."""

    @property
    def entity(self) -> str: ...
    @property
    def field(self) -> str: ...
    @property
    def year(self) -> int | None: ...
    @property
    def value(self) -> str: ...


def render_records(records: Sequence[RecordLike]) -> str:
    """The minimal rendering of records a memory would have to keep: one ``entity | field | year | value`` line each."""
    return "\n".join(f"{r.entity} | {r.field} | {r.year or '-'} | {r.value}" for r in records)


def reach_of(evidence: Sequence[str], doc_ids: Iterable[str]) -> Reach:
    """The evidence documents among ``doc_ids``."""
    wanted = set(evidence)
    return Reach(len(wanted & set(doc_ids)), len(wanted))


def node_runtime(cfg: Any, corpus: Corpus, index: Any) -> Runtime[StrategyContext[Any]]:
    """A strategy node's runtime without a model (the retrieval nodes a rule calls never use it)."""
    context: StrategyContext[Any] = StrategyContext(llm=None, config=cfg, corpus=corpus, index=index)  # type: ignore[arg-type]  # no model: never called
    return Runtime(context=context)


def cached_index(cfg: Any, corpus: Corpus, env: CeilingEnv) -> Any:
    """The strategy's retrieval index for ``corpus``, built and cached as ``answer()`` builds it."""
    return RetrievalService(settings=cfg, cache_dir=env.cache_dir).build_index(corpus)


def queries(item: CeilingItem, env: CeilingEnv, cap: int) -> list[str]:
    """The question itself, or (``gold_sub_questions``) at most ``cap`` gold sub-questions."""
    if env.gold_sub_questions:
        if item.sub_questions is None:
            raise ValueError(f"{item.sample_id}: gold sub-questions need a synthetic corpus's records")
        return list(item.sub_questions[:cap]) or [item.question.text]
    return [item.question.text]
