"""Full context's evidence ceiling: the documents that survive its own middle truncation
(LLM-free)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longctx.graphs.full_context.truncation import truncation_cut
from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    covered,
    reach_of,
)


@dataclass(frozen=True)
class PromptSpans:
    """Documents' character spans in the prompt, whether it is truncated, and the kept head / tail /
    length."""

    spans: list[tuple[str, int, int]]
    truncated: bool
    head: int
    tail: int
    length: int


@dataclass(frozen=True, kw_only=True)
class TruncatedWindowCeiling(EvidenceCeiling):
    """The evidence documents of the filled prompt that survive the strategy's own middle
    truncation to the window minus the answer budget and reserve (a document cut by the
    truncation counts as reached: upper bound). With evidence sentences (BABILong), the
    supporting facts left whole in the kept head and tail.

    Attributes:
        input_budget, untruncated_prompt: Full context's functions (passed in by its
            registration, which this module cannot import); ``truncation_cut`` is the
            strategy's own truncation rule.
    """

    input_budget: Callable[..., int]
    untruncated_prompt: Callable[..., tuple[str, bool]]

    def spans(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> PromptSpans:
        """The documents' spans in the prompt the strategy builds (the benchmark's official one when
        the question carries it), found with the strategy's own functions so the rule follows
        them."""
        window = cfg.context_window or cfg.default_context_window
        budget = self.input_budget(window, item.question, cfg)
        prompt, _ = self.untruncated_prompt(item.corpus, item.question, cfg)
        spans, pos = [], 0
        for d in item.corpus.documents:  # documents appear in corpus order, each text verbatim
            body = d.text.strip()
            start = prompt.find(body, pos) if body else -1
            if start < 0:
                continue
            spans.append((d.doc_id, start, start + len(body)))
            pos = start + len(body)
        cut = truncation_cut(prompt, budget, env.encode, env.decode)
        if cut is None:
            return PromptSpans(spans, False, len(prompt), 0, len(prompt))
        return PromptSpans(spans, True, cut[0], cut[1], len(prompt))

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        s = self.spans(cfg, item, env)
        if item.spans is not None:
            return Reach(covered(item.spans, kept_regions(item, s)), len(item.spans))
        if not s.truncated:
            return reach_of(item.evidence, (d for d, _, _ in s.spans))
        return reach_of(
            item.evidence,
            (d for d, start, end in s.spans if start < s.head or end > s.length - s.tail),
        )

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        window = cfg.context_window or cfg.default_context_window
        return (
            f"{env.evidence} inside the middle-truncated {window}-token window (- "
            f"{cfg.max_new_tokens} answer, - {cfg.prompt_reserve_tokens})"
        )


def kept_regions(item: CeilingItem, s: PromptSpans) -> list[tuple[str, int, int]]:
    """The documents' characters (in document coordinates) inside the kept head and tail of the
    prompt."""
    kept = [(0, s.length)] if not s.truncated else [(0, s.head), (s.length - s.tail, s.length)]
    lead = {d.doc_id: len(d.text) - len(d.text.lstrip()) for d in item.corpus.documents}
    out = []
    for doc_id, start, end in s.spans:
        for a, b in kept:
            lo, hi = max(start, a), min(end, b)
            if lo < hi:
                out.append((doc_id, lo - start + lead[doc_id], hi - start + lead[doc_id]))
    return out
