import random

import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index, chunk_corpus
from longctx.retrieval.bm25 import BM25Retriever, tokenize, top_k

WORDS = (
    "river market castle engine harvest violin glacier copper lantern meadow orbit saddle "
    "tunnel falcon quarry velvet beacon canyon ember harbor island jasmine kernel ledger"
).split()


def random_corpus(n_docs: int, seed: int = 0) -> Corpus:
    rng = random.Random(seed)
    return Corpus.from_texts(
        [" ".join(rng.choices(WORDS, k=rng.randint(20, 120))) for _ in range(n_docs)]
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The Cat and the HAT!", ["cat", "hat"]),  # lowercased, stopwords dropped
        ("revenue: 4,512 in 2023", ["revenue", "4", "512", "2023"]),
        ("snake_case words", ["snake", "case", "words"]),
        ("", []),
    ],
)
def test_tokenize_english(text, expected):
    assert tokenize(text) == expected


def test_tokenize_chinese_uses_jieba_words_not_characters():
    tokens = tokenize("北京是中国的首都 and Paris")
    assert "北京" in tokens and "首都" in tokens and "paris" in tokens
    assert "and" not in tokens


@pytest.mark.parametrize(
    "scores,k,expected",
    [
        ([0.1, 0.5, 0.3], 2, [(1, 0.5), (2, 0.3)]),
        ([1.0, 1.0, 1.0, 0.5], 2, [(0, 1.0), (1, 1.0)]),  # ties: lower index first
        (
            [0.0, 2.0, 0.0],
            3,
            [(1, 2.0), (0, 0.0), (2, 0.0)],
        ),  # zero scores fill the k places, in chunk order
        ([0.0, 0.0, 0.0, 0.0], 2, [(0, 0.0), (1, 0.0)]),  # ties in chunk order
        ([0.2, 0.0, 0.9, 0.0, 0.2], 4, [(2, 0.9), (0, 0.2), (4, 0.2), (1, 0.0)]),
        ([3.0], 5, [(0, 3.0)]),
        ([1.0, 2.0], 0, []),
        ([], 3, []),
    ],
)
def test_top_k(scores, k, expected):
    assert [
        (i, pytest.approx(s)) for i, s in top_k(np.array(scores, dtype=np.float32), k)
    ] == expected


def test_bm25s_and_rank_bm25_agree_on_top_k():
    corpus = random_corpus(300)
    chunks = chunk_corpus(corpus, ChunkingConfig(size=64))
    fast, ref = BM25Retriever(engine="bm25s"), BM25Retriever(engine="rank_bm25")
    fast.build(chunks)
    ref.build(chunks)
    rng = random.Random(1)
    for _ in range(40):
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
        a, b = fast.scores(query), ref.scores(query)
        # bm25s drops the constant (k1 + 1) factor: scores are proportional, rankings equal
        np.testing.assert_allclose(a * (fast.k1 + 1), b, rtol=1e-4, atol=1e-4)
        assert [i for i, _ in fast.search(query, 10)] == [i for i, _ in ref.search(query, 10)]


def test_unknown_query_words_return_the_first_chunks_with_zero_scores():
    index = build_index(random_corpus(20), "bm25")
    hits = index.search("xylophone zeppelin", 5)
    assert [(h.chunk.chunk_id, h.score) for h in hits] == [
        (c.chunk_id, 0.0) for c in index.chunks[:5]
    ]


@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
def test_bm25_save_load_round_trip(engine, tmp_path):
    corpus = random_corpus(50)
    built = build_index(corpus, "bm25", engine=engine, cache_dir=tmp_path)
    from longctx.retrieval import index as index_module

    index_module.clear_memory_cache()
    loaded = build_index(corpus, "bm25", engine=engine, cache_dir=tmp_path)
    assert loaded is not built and loaded.path == built.path
    for q in ["river castle", "ember harbor jasmine"]:
        assert [(h.chunk.chunk_id, round(h.score, 4)) for h in loaded.search(q, 5)] == [
            (h.chunk.chunk_id, round(h.score, 4)) for h in built.search(q, 5)
        ]


def test_planted_fact_is_retrieved_first(planted_corpus):
    hits = build_index(
        planted_corpus, "bm25", chunking=ChunkingConfig(unit="words", size=60)
    ).search("museum vault code", 3)
    assert hits[0].chunk.title == "Vault" and "7421" in hits[0].chunk.text


def test_building_an_index_logs_nothing_of_bm25s(caplog):
    """bm25s sets its logger to DEBUG when it is imported, on first use now that it loads lazily:
    every index build would print 'Building index from tokens' under ``longctx``'s progress bar."""
    import logging

    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # as bm25s's own import leaves it
    with caplog.at_level(logging.DEBUG):
        BM25Retriever().build(
            chunk_corpus(
                Corpus.from_texts(["The vault code is 7421.", "A lighthouse."]),
                ChunkingConfig(size=8),
            )
        )
    assert [r.getMessage() for r in caplog.records if r.name == "bm25s"] == []
