"""Hybrid BM25 + dense retrieval (issue 39, item 1): fusion rules against hand-computed fusions,
component ranks and scores on every Evidence, the dense component's index reused, and the
strategies that take a retriever taking ``hybrid``."""

from __future__ import annotations

import random

import pytest

from longctx import answer
from longctx.retrieval import Corpus, build_index, make_retriever
from longctx.retrieval.fusion import reciprocal_rank_fusion, score_fusion
from longctx.retrieval.hybrid import HybridRetriever
from tests.registries import retrieving_strategies
from tests.scripted import ScriptedChatModel

# two rankings, best first: (chunk_id, score)
LEXICAL = [(3, 9.0), (1, 5.0), (7, 2.0)]
DENSE = [(1, 0.9), (5, 0.8), (3, 0.7), (2, 0.1)]


def test_rrf_equals_a_hand_computed_fusion_of_two_rankings():
    fused = reciprocal_rank_fusion({"bm25": LEXICAL, "dense": DENSE}, k=60)
    # by hand, 1 / (60 + rank), ranks 1-based:
    # chunk 1: 1/62 + 1/61 = .032522; chunk 3: 1/61 + 1/63 = .032266; chunk 5: 1/62; chunk 7: 1/63;
    # chunk 2: 1/64
    assert [f.chunk_id for f in fused] == [1, 3, 5, 7, 2]
    expected = [1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 62, 1 / 63, 1 / 64]
    assert [f.score for f in fused] == pytest.approx(expected, rel=1e-12)
    first = fused[0].components
    assert (first["bm25"].rank, first["bm25"].score, first["dense"].rank, first["dense"].score) == (
        1,
        5.0,
        0,
        0.9,
    )
    assert (fused[2].components["bm25"].rank, fused[2].components["bm25"].score) == (
        None,
        None,
    )  # chunk 5: dense only


def test_score_fusion_equals_a_hand_computed_weighted_sum_of_min_max_scores():
    fused = score_fusion({"bm25": LEXICAL, "dense": DENSE}, {"bm25": 0.75, "dense": 0.25})
    # min-max: bm25 9,5,2 -> 1, 3/7, 0; dense .9,.8,.7,.1 -> 1, .875, .75, 0
    # chunk 3: .75*1 + .25*.75; chunk 1: .75*3/7 + .25*1; chunk 5: .25*.875; chunks 7 and 2: 0 (tie:
    # lower id first)
    assert [f.chunk_id for f in fused] == [3, 1, 5, 2, 7]
    assert [f.score for f in fused] == pytest.approx(
        [0.9375, 0.75 * 3 / 7 + 0.25, 0.21875, 0.0, 0.0]
    )


def test_fusion_shapes_ties_one_item_empty_and_ten_thousand():
    # ties: each chunk first in one list -> equal scores, broken by chunk id
    assert [f.chunk_id for f in reciprocal_rank_fusion({"a": [(9, 1.0)], "b": [(4, 1.0)]})] == [
        4,
        9,
    ]
    assert [f.chunk_id for f in reciprocal_rank_fusion({"a": [(2, 1.0)], "b": [(2, 3.0)]})] == [
        2
    ]  # n=1
    assert reciprocal_rank_fusion({"a": [], "b": []}) == []
    assert score_fusion({"a": [], "b": []}, {"a": 0.5, "b": 0.5}) == []
    one = score_fusion(
        {"a": [(0, 4.0)], "b": [(0, 4.0)]}, {"a": 0.5, "b": 0.5}
    )  # one score each: counted as found
    assert [(f.chunk_id, f.score) for f in one] == [(0, 1.0)]
    rng = random.Random(0)
    a = [(i, 1.0 / (r + 1)) for r, i in enumerate(rng.sample(range(10_000), 10_000))]
    b = [(i, 1.0 / (r + 1)) for r, i in enumerate(rng.sample(range(10_000), 10_000))]
    fused = reciprocal_rank_fusion({"a": a, "b": b})
    assert len(fused) == 10_000 and all(x.score >= y.score for x, y in zip(fused, fused[1:]))
    ra, rb = {c: r for r, (c, _) in enumerate(a)}, {c: r for r, (c, _) in enumerate(b)}
    top = fused[0]
    assert top.score == pytest.approx(1 / (61 + ra[top.chunk_id]) + 1 / (61 + rb[top.chunk_id]))
    assert (top.components["a"].rank, top.components["b"].rank) == (
        ra[top.chunk_id],
        rb[top.chunk_id],
    )
    with pytest.raises(ValueError, match="weight"):
        score_fusion({"a": a, "b": b}, {"a": 1.0})


DOCS = [
    "The orchestra performed Beethoven's ninth symphony to a full concert hall.",
    "Quarterly revenue rose 12 percent thanks to strong sales of electric cars.",
    "The football team won the championship after a dramatic penalty shootout.",
    "Invoice INV-20931 was paid late by the Harbour Trading Company.",
]


def corpus() -> Corpus:
    return Corpus.from_texts(DOCS, titles=[f"doc{i}" for i in range(len(DOCS))])


def test_hybrid_index_keeps_both_components_ranks_and_reuses_the_dense_index(tmp_path):
    dense = build_index(corpus(), "dense", cache_dir=tmp_path)
    lexical = build_index(corpus(), "bm25", cache_dir=tmp_path)
    index = build_index(corpus(), "hybrid", cache_dir=tmp_path)
    assert (
        index.retriever.components["dense"] is dense.retriever
    )  # the dense index reused: nothing embedded twice
    bm25_fitted = build_index(corpus(), index.retriever.components["bm25"], cache_dir=tmp_path)
    # no second dense index; BM25 over the chunks fitted to MiniLM has its own (here: the same
    # chunks)
    built = sorted(p.name for p in (tmp_path / "indexes").iterdir() if "." not in p.name)
    assert built == sorted([dense.path.name, lexical.path.name, bm25_fitted.path.name])
    assert [c.text for c in bm25_fitted.chunks] == [c.text for c in lexical.chunks]
    query = "automobile earnings INV-20931"  # dense finds the cars; BM25 the invoice number
    hits = index.search(query, 4)
    bm25_ranks = {cid: r for r, (cid, s) in enumerate(lexical.retriever.search(query, 4)) if s > 0}
    dense_ranks = {cid: r for r, (cid, _) in enumerate(dense.retriever.search(query, 4))}
    expected = sorted(
        range(4),
        key=lambda c: (
            -sum(1 / (61 + ranks[c]) for ranks in (bm25_ranks, dense_ranks) if c in ranks),
            c,
        ),
    )
    assert [h.chunk.chunk_id for h in hits] == expected
    for h in hits:
        assert h.components is not None
        assert h.components["bm25"]["rank"] == bm25_ranks.get(h.chunk.chunk_id)
        assert h.components["dense"]["rank"] == dense_ranks[h.chunk.chunk_id]
    assert {hits[0].chunk.doc_id, hits[1].chunk.doc_id} == {corpus()[1].doc_id, corpus()[3].doc_id}


@pytest.mark.parametrize("strategy", retrieving_strategies())
def test_strategies_take_hybrid_and_every_evidence_carries_its_components(strategy):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Harbour Trading Company")
    options = {"judge_mode": "prefilter"} if strategy == "pai" else {}
    result = answer(
        corpus(),
        "Which company paid invoice INV-20931 late?",
        strategy=strategy,
        llm=llm,
        retriever="hybrid",
        retriever_options={"fusion": "score", "weight": 0.4},
        top_k=3,
        **options,
    )
    assert result.config["retriever"] == "hybrid"
    # PAI's evidence is what its judge kept; the search agent's what it cites (none: no search)
    if strategy not in ("pai", "pai_minus", "search_agent"):
        assert result.evidence and all(
            e.components and set(e.components) == {"bm25", "dense"} for e in result.evidence
        )
        assert result.evidence[0].title == "doc3"


def test_hybrid_options_are_checked():
    with pytest.raises(ValueError, match="dense retriever"):
        make_retriever("hybrid", dense="bm25")
    with pytest.raises(ValueError, match="weight"):
        make_retriever("hybrid", fusion="score", weight=1.5)
    with pytest.raises(TypeError, match="no option"):
        make_retriever("hybrid", k=60)
    assert isinstance(make_retriever("hybrid", rrf_k=10), HybridRetriever)
