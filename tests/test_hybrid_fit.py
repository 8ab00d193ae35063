"""Hybrid retrieval over chunks longer than the embedder reads: BM25 and dense index the same
fitted chunks, when built, grown, edited and compacted, and the evidence is the fitted chunks'
text (a hybrid over the default 200-word chunks used to fail: dense split them, BM25 did not)."""

from __future__ import annotations

import json
import random

from longctx import answer
from longctx.retrieval import Corpus, build_index, make_retriever
from longctx.retrieval.chunking import ChunkingConfig, chunk_corpus
from longctx.retrieval.contract.document import Document
from longctx.retrieval.fit import chunks_for, over_limit
from longctx.retrieval.index import CompactionPolicy, Index, index_key
from tests.scripted import ScriptedChatModel

WORDS = ChunkingConfig(unit="words", size=200)  # the retrieving strategies' default chunks


def long_words_document(seed: int, words: int = 400) -> str:
    """Numbers of 7-9 digits (several MiniLM word pieces each): a 200-word chunk is about 600
    word pieces."""
    rng = random.Random(seed)
    return " ".join(
        f"ledger{seed}entry{j}" if j % 3 == 0 else str(rng.randrange(10**6, 10**9))
        for j in range(words)
    )


def corpus(n: int = 2) -> Corpus:
    return Corpus.from_texts(
        [long_words_document(i) for i in range(n)], titles=[f"doc{i}" for i in range(n)]
    )


def components(index: Index, c: Corpus, cache_dir, **options) -> dict[str, Index]:
    """The hybrid's components' own (cached) indexes of ``c``."""
    return {
        name: build_index(c, r, chunking=WORDS, cache_dir=cache_dir, **options)
        for name, r in index.retriever.components.items()
    }


def meta(index: Index) -> dict:
    """The ``meta.json`` of a cached index."""
    assert index.path is not None
    return json.loads((index.path / "meta.json").read_text())


def assert_aligned(index: Index, parts: dict[str, Index]) -> None:
    """Both components index the hybrid's chunks: same ids, same texts, each within MiniLM's 256
    word pieces."""
    expected = [(ch.chunk_id, ch.doc_id, ch.text) for ch in index.chunks]
    for name, part in parts.items():
        assert [(ch.chunk_id, ch.doc_id, ch.text) for ch in part.chunks] == expected, name
    limit = index.retriever.chunk_limit()
    assert limit is not None and not any(over_limit([ch.text for ch in index.chunks], limit))


def test_hybrid_over_chunks_longer_than_the_embedder_reads_indexes_the_same_fitted_chunks(tmp_path):
    c = corpus()
    plain = build_index(c, "bm25", chunking=WORDS, cache_dir=tmp_path)  # BM25's own, as chunked
    index = build_index(c, "hybrid", chunking=WORDS, cache_dir=tmp_path)
    limit = index.retriever.chunk_limit()
    assert limit is not None and all(
        over_limit([ch.text for ch in chunk_corpus(c, WORDS)], limit)
    )  # every chunk as chunked is over MiniLM's 256 word pieces
    parts = components(index, c, tmp_path)
    assert_aligned(index, parts)
    assert len(index.chunks) > len(plain.chunks)  # split to fit, not cut
    assert parts["bm25"].path != plain.path  # the fitted chunks are cached apart from BM25's own
    assert "".join(ch.text for ch in index.chunks if ch.doc_index == 1) == "".join(
        ch.text for ch in plain.chunks if ch.doc_index == 1
    )  # the pieces together are the chunks
    hits = index.search("ledger1entry3", 3)
    assert hits[0].chunk.doc_id == c[1].doc_id and hits[0].chunk.text.startswith("ledger1entry0 ")
    assert hits[0].components is not None and hits[0].components["bm25"]["rank"] == 0


def test_answer_with_hybrid_over_long_chunks_returns_the_fitted_chunks_as_evidence(tmp_path):
    c = corpus()
    llm = ScriptedChatModel(reply_fn=lambda prompt: "ledger1")
    result = answer(
        c,
        "Which ledger holds ledger1entry300?",
        strategy="rag",
        llm=llm,
        retriever="hybrid",
        top_k=3,
    )
    fitted = build_index(c, "dense", chunking=WORDS)  # the same cache: the index answer() used
    texts = {ch.chunk_id: ch.text for ch in fitted.chunks}
    assert result.evidence and all(texts[e.chunk_id] == e.text for e in result.evidence)
    assert "ledger1entry300" in result.evidence[0].text
    assert result.evidence[0].components and set(result.evidence[0].components) == {"bm25", "dense"}


def test_a_grown_edited_and_compacted_hybrid_keeps_its_components_aligned(tmp_path):
    c = corpus(2)
    build_index(c, "hybrid", chunking=WORDS, cache_dir=tmp_path)
    grown = c.add([long_words_document(7)])
    index = build_index(grown, "hybrid", chunking=WORDS, cache_dir=tmp_path)
    parts = components(index, grown, tmp_path)
    assert_aligned(index, parts)
    assert all(len(meta(p)["segments"]) == 2 for p in parts.values())  # grown by a segment
    hits = index.search("ledger7entry9", 1)
    assert hits[0].chunk.doc_id == grown[2].doc_id and hits[0].components is not None
    assert (
        hits[0].components["bm25"]["rank"] == 0 and hits[0].components["dense"]["rank"] is not None
    )

    edit = Document(doc_id=grown[0].doc_id, title="doc0", text=long_words_document(8, 300))
    edited = grown.update(edit).remove(grown[1].doc_id)
    keep = CompactionPolicy(max_deleted=1.0)  # tombstones, not compaction
    index = build_index(edited, "hybrid", chunking=WORDS, cache_dir=tmp_path, compaction=keep)
    parts = components(index, edited, tmp_path, compaction=keep)
    assert_aligned(index, parts)
    assert all(meta(p)["deleted_documents"] == [0, 1] for p in parts.values())
    fresh = chunks_for(edited, WORDS, index.retriever)  # as a fresh build chunks and fits them
    assert [(ch.chunk_id, ch.text) for ch in index.chunks] == [
        (ch.chunk_id, ch.text) for ch in fresh
    ]

    policy = CompactionPolicy(max_segments=1)
    last = edited.add([long_words_document(9, 250)])
    index = build_index(last, "hybrid", chunking=WORDS, cache_dir=tmp_path, compaction=policy)
    parts = components(index, last, tmp_path, compaction=policy)
    assert_aligned(index, parts)
    assert all(meta(p).get("compacted_segments") for p in parts.values())  # one segment again


def test_the_hybrids_bm25_is_keyed_by_the_dense_limit_and_not_by_the_dense_backend():
    c = corpus(1)

    def bm25_key(**dense_options) -> str:
        hybrid = make_retriever("hybrid", dense_options=dense_options)
        return index_key(c, WORDS, hybrid.components["bm25"])

    plain = index_key(c, WORDS, make_retriever("bm25"))
    assert bm25_key() != plain  # other chunks than BM25's own: never its cached index
    assert bm25_key(backend="torch") == bm25_key(backend="onnx")  # the backend keeps the limit
    assert bm25_key(model="/models/other") not in (bm25_key(), plain)
    assert bm25_key(fit_chunks=False) == plain  # nothing fitted: BM25's own chunks and index
