"""The evidence-ceiling contract: what a strategy declares so its ceiling is measured without a
model.

A strategy registers an :class:`EvidenceCeiling` (``STRATEGIES.register(..., ceiling=...)``):
the rule that says how much of a question's known evidence can reach its final model call,
computed with the strategy's own retrieval / packing / truncation code and no model.
``longctx.experiments.ceilings.measure`` loops over questions and strategies, reads these rules from
the registry and prints the tables; the rules themselves live in each strategy's package
(``graphs/<name>/ceiling.py``). A ceiling is an upper bound on accuracy, not an accuracy.

Evidence comes in one of two units: documents (``CeilingItem.evidence``: synthetic corpora,
benchmarks naming evidence documents), or sentences (``CeilingItem.spans``: BABILong's
supporting facts, character spans inside a document). A rule counts sentences when the item
has spans: a sentence is reached when the text the strategy reads covers it whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langgraph.runtime import Runtime

from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.plugin.context import StrategyContext
from longctx.retrieval import tokens
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.contract import Corpus


@dataclass(frozen=True)
class EvidenceSpan:
    """One evidence sentence: characters ``[start, end)`` of document ``doc_id`` (a BABILong
    supporting fact)."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class CeilingItem:
    """One question with its evidence: documents, and (synthetic corpora) records and gold
    sub-questions.

    Attributes:
        spans: Evidence sentences (BABILong's supporting facts); when set, rules count these.
        cell: ``(task, length)`` for tables per task x length (BABILong).
    """

    sample_id: str
    corpus: Corpus
    question: Any
    evidence: tuple[str, ...]
    difficulty: str | None = None
    records: tuple[Any, ...] | None = None
    sub_questions: tuple[str, ...] | None = None
    spans: tuple[EvidenceSpan, ...] | None = None
    cell: tuple[str, str] | None = None

    @property
    def facts(self) -> tuple[str, ...]:
        """The evidence sentences' text (empty without spans)."""
        texts = {d.doc_id: d.text for d in self.corpus.documents}
        return tuple(texts[s.doc_id][s.start : s.end] for s in self.spans or ())


@dataclass(frozen=True)
class Reach:
    """How much of one question's evidence reaches the final call (in the rule's unit: documents,
    records...)."""

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
    """What every rule gets besides its config: where indexes are cached, the tokenizer, options,
    and whether the questions' evidence is sentences (``sentences``: BABILong's supporting
    facts)."""

    cache_dir: str | Path | None = None
    encode: Callable[[str], list[int]] = tokens.encode
    decode: Callable[[list[int]], str] = tokens.decode
    gold_sub_questions: bool = False
    sentences: bool = False

    @property
    def evidence(self) -> str:
        """What the rules' descriptions call the evidence: ``evidence docs``, or
        ``supporting facts`` (sentences)."""
        return "supporting facts" if self.sentences else "evidence docs"


class SkipCeiling(Exception):
    """The rule does not apply to these questions (e.g. it needs records a benchmark does not
    have)."""


@dataclass(frozen=True, kw_only=True)
class EvidenceCeiling:
    """A strategy's LLM-free evidence-ceiling rule; subclasses implement :meth:`reach` and
    :meth:`describe`.

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
        """The rule applied under ``cfg``, in one line (``corpus_tokens``: of the first question's
        corpus)."""
        raise NotImplementedError

    def detail(
        self, cfg: Any, items: Sequence[CeilingItem], reaches: Sequence[Reach], env: CeilingEnv
    ) -> dict[str, Any]:
        """Rule-specific extras for the ceiling's ``detail`` (none by default)."""
        return {}


@dataclass(frozen=True, kw_only=True)
class NeedsIndexLLM(EvidenceCeiling):
    """No LLM-free ceiling: what a strategy retrieves is ranked over what an index-time model wrote
    (RAPTOR's summaries, HippoRAG's triples); every question is skipped with ``reason``."""

    reason: str

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        """Never: raises :class:`SkipCeiling` with the reason."""
        raise SkipCeiling(self.reason)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        """``no LLM-free ceiling (<reason>)``."""
        return f"no LLM-free ceiling ({self.reason})"


class RecordLike(Protocol):
    """A fact a question needs: an entity's field in a year, with its value
    (``longctx.experiments.synth.records.Record``)."""

    @property
    def entity(self) -> str: ...
    @property
    def field(self) -> str: ...
    @property
    def year(self) -> int | None: ...
    @property
    def value(self) -> str: ...


def render_records(records: Sequence[RecordLike]) -> str:
    """The minimal rendering of records a memory would have to keep: one
    ``entity | field | year | value`` line each."""
    return "\n".join(f"{r.entity} | {r.field} | {r.year or '-'} | {r.value}" for r in records)


def reach_of(evidence: Sequence[str], doc_ids: Iterable[str]) -> Reach:
    """The evidence documents among ``doc_ids``."""
    wanted = set(evidence)
    return Reach(len(wanted & set(doc_ids)), len(wanted))


def node_runtime(cfg: Any, corpus: Corpus, index: Any) -> Runtime[StrategyContext[Any]]:
    """A strategy node's runtime without a model (the retrieval nodes a rule calls never use it)."""
    no_model: Any = None  # the retrieval nodes a rule calls never use it
    context: StrategyContext[Any] = StrategyContext(
        llm=no_model, config=cfg, corpus=corpus, index=index
    )
    return Runtime(context=context)


def cached_index(cfg: Any, corpus: Corpus, env: CeilingEnv) -> Any:
    """The strategy's retrieval index for ``corpus``, built and cached as ``answer()`` builds it."""
    return RetrievalService(settings=cfg, cache_dir=env.cache_dir).build_index(corpus)


def queries(item: CeilingItem, env: CeilingEnv, cap: int) -> list[str]:
    """The question itself, or (``gold_sub_questions``) at most ``cap`` gold sub-questions."""
    if env.gold_sub_questions:
        if item.sub_questions is None:
            raise ValueError(
                f"{item.sample_id}: gold sub-questions need a synthetic corpus's records"
            )
        return list(item.sub_questions[:cap]) or [item.question.text]
    return [item.question.text]


def covered(spans: Iterable[EvidenceSpan], regions: Iterable[tuple[str, int, int]]) -> int:
    """How many ``spans`` lie whole inside the union of ``regions`` (``(doc_id, start, end)``,
    overlapping or adjacent)."""
    merged: dict[str, list[list[int]]] = {}
    for doc_id, start, end in sorted(regions):
        runs = merged.setdefault(doc_id, [])
        if runs and start <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([start, end])
    return sum(any(a <= s.start and s.end <= b for a, b in merged.get(s.doc_id, [])) for s in spans)


def chunk_regions(corpus: Corpus, chunks: Iterable[Chunk]) -> dict[int, tuple[str, int, int]]:
    """``chunk_id -> (doc_id, start, end)`` of chunks in their document's text.

    A chunk is an exact substring of its document and a document's chunks come in order, each
    starting after the one before; ``chunks`` must hold every chunk of the documents asked about
    (an index's ``chunks``), so each is found from where its predecessor starts.
    """
    out: dict[int, tuple[str, int, int]] = {}
    last: dict[int, int] = {}
    for c in sorted(
        {c.chunk_id: c for c in chunks}.values(), key=lambda c: (c.doc_index, c.position)
    ):
        text = corpus.documents[c.doc_index].text
        start = text.find(c.text, last[c.doc_index] + 1 if c.doc_index in last else 0)
        if start < 0:
            raise ValueError(f"chunk {c.chunk_id} of {c.doc_id} is not in its document's text")
        last[c.doc_index] = start
        out[c.chunk_id] = (c.doc_id, start, start + len(c.text))
    return out


def reach_in_chunks(
    item: CeilingItem, read: Iterable[Chunk], every_chunk: Iterable[Chunk]
) -> Reach:
    """The item's evidence in the chunks ``read``: sentences covered (with spans), else documents.

    ``every_chunk``: all chunks of the corpus (the index's), to place the read ones in their text.
    """
    read = list(read)
    if item.spans is None:
        return reach_of(item.evidence, (c.doc_id for c in read))
    regions = chunk_regions(item.corpus, every_chunk)
    return Reach(covered(item.spans, (regions[c.chunk_id] for c in read)), len(item.spans))
