"""HippoRAG's cost model: per question one recognition-filter call (none when no fact is linked) and
one answer call; once per corpus a NER and a triple-extraction call per passage (none when the graph
is already cached, so the least run is the answer calls alone)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.requests import (
    Messages,
    filter_messages,
    ner_messages,
    qa_messages,
    triple_messages,
)
from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    RAG_TEMPLATE,
    SEAM_TOKENS,
    Calls,
    CorpusShape,
    CostPlan,
    Costs,
    ExpectedCost,
    IndexWork,
    counter,
    fill,
    prompt_tokens,
    reply_tokens,
)
from longctx.retrieval.contract import Question

#: Typical replies: a NER reply's and a triple reply's tokens, a fact's tokens, the entity list sent
#: back (measured scale: a 100-word passage).
NER_REPLY_TOKENS, TRIPLE_REPLY_TOKENS, FACT_TOKENS, ENTITY_JSON_TOKENS = 40, 150, 15, 40
#: A fact the filter reads, or the entity list a triple call sends back, is at most this many times
#: its reply's budget (escaped characters).
ESCAPE_FACTOR = 6


def _joined(messages: Messages) -> str:
    return "\n".join(m["content"] for m in messages)


def passage_count(cfg: HippoRAGConfig, shape: CorpusShape) -> int:
    """Passages of the corpus: one per document, or per ``passage_tokens`` of each document."""
    if cfg.passage_tokens is None:
        return len(shape.token_counts)
    return sum(max(1, math.ceil(n / cfg.passage_tokens)) for n in shape.token_counts)


def openie_tokens_left(left: Sequence[tuple[str, int]], llm: BaseChatModel | None) -> int:
    """Prompt tokens the OpenIE calls still to make send at least: per ``(passage, calls left)``,
    the passage read by each call left with its template (the triple call's, and the NER call's
    when both are left), less their seams; what the entity list adds is not claimed."""
    if not any(n for _, n in left):
        return 0
    _, count = counter(llm)
    ner = prompt_tokens("hipporag", "ner", lambda: _joined(ner_messages("")), llm)
    triple = prompt_tokens("hipporag", "triples", lambda: _joined(triple_messages("", [])), llm)
    seams = 2 * SEAM_TOKENS
    return sum(n * (count(text) - seams) + triple + (ner if n == 2 else 0) for text, n in left if n)


def hipporag_costs(
    cfg: HippoRAGConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """Per question the filter and the answer over ``qa_top_k`` passages; once per corpus two OpenIE
    calls per passage."""
    k = len(questions)
    asked = questions or [PLACEHOLDER_QUESTION]
    each_q = [
        prompt_tokens(
            "hipporag", "answer:" + cfg.qa_prompt, functools.partial(_answer_prompt, cfg, x), llm, x
        )
        for x in asked
    ]
    each_f = [
        prompt_tokens(
            "hipporag",
            "filter",
            functools.partial(lambda q: _joined(filter_messages(q.render(), [])), x),
            llm,
            x,
        )
        for x in asked
    ]
    ner = prompt_tokens("hipporag", "ner", lambda: _joined(ner_messages("")), llm)
    triple = prompt_tokens("hipporag", "triples", lambda: _joined(triple_messages("", [])), llm)
    passages = passage_count(cfg, shape)
    largest = sorted(shape.token_counts, reverse=True)[: cfg.qa_top_k]
    title_tokens = 2 * cfg.qa_top_k + 20 * cfg.qa_top_k  # a title line and its header per passage
    context_most = (
        sum(largest) + title_tokens
        if cfg.passage_tokens is None
        else min(shape.tokens, cfg.qa_top_k * cfg.passage_tokens) + title_tokens
    )
    fact_most = cfg.linking_top_k * ESCAPE_FACTOR * cfg.openie_max_tokens
    seams = 2 * SEAM_TOKENS
    least = k * max(0, min(each_q) - seams)
    index_most = (
        2 * shape.tokens
        + 2 * passages * (title_tokens + seams)
        + passages * (ner + triple + ESCAPE_FACTOR * cfg.openie_max_tokens)
    )
    most = k * (max(each_q) + context_most + max(each_f) + fact_most + 2 * seams) + index_most
    bounds = CostPlan(
        strategy="hipporag",
        questions=k,
        calls=k,
        max_calls=2 * k + 2 * passages,
        prompt_tokens=least,
        max_prompt_tokens=most,
        completion_tokens=k * (cfg.filter_max_tokens + cfg.max_new_tokens)
        + 2 * passages * cfg.openie_max_tokens,
        formula="1 filter call (none without linked facts) and 1 answer call per question; once "
        "per corpus a NER and a triple call per passage (none when the graph is cached)",
        details={"passages": passages},
        index=IndexWork(
            what="OpenIE of every passage, a NER and a triple call each",
            calls=0,
            max_calls=2 * passages,
            prompt_tokens=0,
            max_prompt_tokens=index_most,
            completion_tokens=2 * passages * cfg.openie_max_tokens,
        ),
    )
    context = min(shape.tokens, cfg.qa_top_k * (shape.tokens / max(1, passages))) + title_tokens
    per_question = Calls(
        2,
        sum(each_q) / len(each_q)
        + context
        + sum(each_f) / len(each_f)
        + cfg.linking_top_k * FACT_TOKENS,
        reply_tokens(cfg) + cfg.linking_top_k * FACT_TOKENS,
    )
    once = Calls(
        2 * passages,
        passages * (ner + triple + ENTITY_JSON_TOKENS) + 2 * shape.tokens,
        passages * (NER_REPLY_TOKENS + TRIPLE_REPLY_TOKENS),
    )
    # the graph's OpenIE is all of what is built once
    return Costs(bounds, ExpectedCost(per_question, once, index=once))


def _answer_prompt(cfg: HippoRAGConfig, question: Question) -> str:
    """The answer call's text without its passages (the official messages joined for ``paper``)."""
    if cfg.qa_prompt == "paper":
        return _joined(qa_messages([], question.render()))
    return fill(RAG_TEMPLATE, "", question)
