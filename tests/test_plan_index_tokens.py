"""An index build's prompt tokens count in the least run while the index is not cached: a budget
above the question-time least but below least + build is refused before any request reaches the
server, and admitted once the graph is cached, whose plan then counts none of the build, at least
or at most (issue #47 item 4)."""

from __future__ import annotations

import pytest

from longctx import Budget, BudgetExceeded, answer, estimate
from longctx.graphs.hipporag.build import forget_graphs
from longctx.graphs.raptor import graph as raptor_graph
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer
from tests.test_hipporag import DOCS, QUESTION
from tests.test_index_strategies_trust import chat, openie_reply
from tests.test_raptor import corpus as raptor_corpus


@pytest.fixture(autouse=True)
def fresh_memory():
    forget_graphs()
    yield
    forget_graphs()


def test_a_token_budget_the_openie_build_passes_is_refused_until_the_graph_is_cached(tmp_path):
    corpus = Corpus.from_texts(DOCS)
    built = tmp_path / "built"
    with RecordingServer(openie_reply) as server:
        answer(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=built)
        forget_graphs()  # the graph is on disk only
        cached = estimate(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=built)
        budget = Budget(max_prompt_tokens=cached.prompt_tokens + 1)  # just above today's least
        fresh = tmp_path / "fresh"
        plan = estimate(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=fresh)
        sent = len(server.requests)
        with pytest.raises(BudgetExceeded, match="prompt tokens >"):
            answer(
                corpus,
                QUESTION,
                strategy="hipporag",
                llm=chat(server),
                cache_dir=fresh,
                budget=budget,
            )
        assert len(server.requests) == sent  # refused up front: no OpenIE call spent
        admitted = answer(
            corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=built, budget=budget
        )
    assert admitted.usage.index_llm_calls == 0
    # the build's six calls read each passage with its template: hundreds of tokens, not a few
    assert plan.calls == cached.calls + 6 and plan.index.calls == 6
    assert plan.prompt_tokens - cached.prompt_tokens == plan.index.prompt_tokens > 6 * 100
    assert plan.max_prompt_tokens >= plan.prompt_tokens
    # cached, nothing of the build is left in the most either: the filter and the answer
    assert (cached.max_calls, cached.index.max_calls, cached.index.max_prompt_tokens) == (2, 0, 0)
    assert cached.max_prompt_tokens == plan.max_prompt_tokens - plan.index.max_prompt_tokens


def test_raptors_first_summary_counts_its_prompt_in_the_least(tmp_path):
    raptor_graph._TREES.clear()
    corpus = raptor_corpus(60)
    with RecordingServer(openie_reply) as server:
        plan = estimate(corpus, QUESTION, strategy="raptor", llm=chat(server), cache_dir=tmp_path)
        with pytest.raises(BudgetExceeded, match="prompt tokens >"):
            answer(
                corpus,
                QUESTION,
                strategy="raptor",
                llm=chat(server),
                cache_dir=tmp_path,
                budget=Budget(max_prompt_tokens=plan.prompt_tokens - plan.index.prompt_tokens + 1),
            )
    assert server.requests == []
    assert (plan.index.calls, plan.details["index_tokens_left"]) == (1, plan.index.prompt_tokens)
    assert plan.index.prompt_tokens > 10
