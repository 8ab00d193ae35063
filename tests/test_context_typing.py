"""The typed run context: the index a retrieving node needs, and the batch runner's run mode."""

import pytest

from longctx.graphs import STRATEGIES
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.plugin.context import MissingIndex, StrategyContext
from longctx.graphs.rag.graph import retrieve
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.scripted import ScriptedChatModel


def _context(index=None) -> StrategyContext:
    cfg = STRATEGIES.get("rag").make_config(chunk_size=20, top_k=1)
    return StrategyContext(
        llm=ScriptedChatModel(replies=[]),
        config=cfg,
        corpus=Corpus.from_texts(["The vault code is 7421."]),
        index=index,
    )


class _Runtime:
    def __init__(self, context):
        self.context = context


def test_require_index_returns_the_runs_index(tmp_path):
    ctx = _context()
    index = RetrievalService(settings=ctx.config, cache_dir=tmp_path).build_index(ctx.corpus)
    with_index = _context(index)
    assert with_index.require_index() is index
    hits = retrieve({"question": Question(text="vault code?")}, _Runtime(with_index))["hits"]
    assert hits and "7421" in hits[0].chunk.text


def test_a_retrieving_node_without_an_index_says_so():
    with pytest.raises(
        MissingIndex, match="RagConfig: this strategy retrieves, but its run context has no index"
    ):
        retrieve({"question": Question(text="vault code?")}, _Runtime(_context()))


def test_batch_mode_narrows_the_run_mode_or_refuses():
    memagent = STRATEGIES.get("memagent")
    assert memagent.batch_mode is memagent.run_mode
    with pytest.raises(
        TypeError, match="Strategy 'rag' is not batched: its run mode is SingleRun()"
    ):
        STRATEGIES.get("rag").batch_mode
