"""A corpus that grows: indexes add a segment of the new documents and rank exactly as a rebuild."""

import json
import logging
import random

import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import bm25 as bm25_module
from longctx.retrieval import index as index_module
from longctx.retrieval.bm25 import BM25Retriever, tokenize
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.contract import CorpusError
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.index import growth
from longctx.retrieval.term_counting import count_terms
from longctx.retrieval.term_counts import bm25_scores
from tests.test_index_cache import CountingEmbedder

VOCABULARY = (
    "harbour ferry cargo tide lighthouse orchard harvest barley cattle tractor orchestra violin "
    "symphony concert theatre glacier summit avalanche trail bridge library archive manuscript "
    "chart donation hospital surgeon vaccine clinic ward railway signal tunnel freight station "
    "market price wheat export tariff comet telescope orbit eclipse observatory river flood levee "
    "rainfall drought vault code museum curator painting"
).split()
CHUNKING = ChunkingConfig(unit="words", size=40)
QUESTIONS = [
    "Which ferry carried cargo past the lighthouse at high tide?",
    "What did the orchestra play at the symphony concert?",
    "When did the avalanche close the summit trail?",
    "Who donated the manuscript to the library archive?",
    "How did the surgeon run the vaccine clinic?",
    "Why was the freight tunnel signal changed?",
    "What tariff hit the wheat export price?",
    "Which telescope saw the comet during the eclipse?",
    "How high did the river flood over the levee?",
    "What is the code of the museum vault?",
]
NEW_DOCUMENT = (
    "The curator of the museum changed the code of the vault to 5930 after the painting was moved "
    "to the glacier observatory."
)


def fresh_process():
    index_module.clear_memory_cache()


def make_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` short documents drawn from a small vocabulary, so that every question matches
    many chunks."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(20, 70))) + "." for _ in range(n)]


def top10(index, question: str) -> list[tuple[int, float]]:
    return [(h.chunk.chunk_id, h.score) for h in index.search(question, 10)]


# -- corpus ---------------------------------------------------------------------------
def test_add_returns_a_new_corpus_that_extends_the_old_one():
    old = Corpus.from_texts(["first text", "second text"])
    grown = old.add(["third text", "fourth text"])
    assert len(old) == 2 and [d.text for d in grown] == [
        "first text",
        "second text",
        "third text",
        "fourth text",
    ]
    assert [d.doc_id for d in grown][2:] == ["2", "3"]
    assert grown.extends(old) and grown.extends(grown) and not old.extends(grown)
    assert (
        grown.prefix_fingerprint(2) == old.fingerprint
        and grown.prefix_fingerprint(4) == grown.fingerprint
    )
    assert (
        grown.fingerprint
        == Corpus.from_texts(["first text", "second text", "third text", "fourth text"]).fingerprint
    )
    assert not Corpus.from_texts(["first text", "other"]).add(["third text"]).extends(old)
    with pytest.raises(CorpusError, match="Nothing to add"):
        old.add([])
    with pytest.raises(CorpusError, match="unique"):
        old.add(Corpus.from_texts(["dup"]).documents)  # doc_id "0" is taken


def test_rescan_appends_new_files_and_updates_edited_ones(tmp_path):
    (tmp_path / "b.txt").write_text("bravo text")
    (tmp_path / "d.txt").write_text("delta text")
    old = Corpus.from_path(tmp_path)
    (tmp_path / "a.txt").write_text("alpha text")  # sorts first, but is new: appended
    grown = old.rescan(tmp_path)
    assert [d.doc_id for d in grown] == ["b.txt", "d.txt", "a.txt"] and grown.extends(old)
    assert grown.rescan(tmp_path) is grown  # nothing new
    (tmp_path / "b.txt").write_text("bravo text, edited")
    changed = grown.rescan(
        tmp_path
    )  # an edit is delete + add: the edited file moves to the end (tests/test_corpus_edits.py)
    assert [d.doc_id for d in changed] == ["d.txt", "a.txt", "b.txt"] and not changed.extends(old)


# -- BM25 -----------------------------------------------------------------------------
def test_term_counts_score_bit_identically_to_bm25s_in_any_number_of_segments():
    rng = random.Random(3)
    texts = make_texts(200) + ["", "vault"]  # an empty chunk and a one-word chunk
    chunks = [Chunk(i, i, str(i), "", 0, t, 0) for i, t in enumerate(texts)]
    reference = BM25Retriever()
    reference.build(chunks)
    tokens = [tokenize(t) for t in texts]
    for cuts in ([202], [150, 202], [1, 100, 199, 202]):
        segments = [count_terms(tokens[a:b]) for a, b in zip([0, *cuts[:-1]], cuts)]
        for _ in range(30):
            query = " ".join(rng.choices(VOCABULARY, k=rng.randint(1, 6)))
            np.testing.assert_array_equal(
                bm25_scores(segments, tokenize(query), k1=1.5, b=0.75), reference.scores(query)
            )


def test_bm25_index_of_a_grown_corpus_adds_one_segment_and_ranks_as_a_rebuild(
    isolated_cache, monkeypatch, caplog
):
    caplog.set_level(logging.INFO, logger="longctx.retrieval.index")
    old = Corpus.from_texts(make_texts(300))
    build_index(old, "bm25", chunking=CHUNKING)
    grown = old.add([NEW_DOCUMENT])
    tokenized: list[str] = []
    fresh_process()
    with (
        monkeypatch.context() as patched
    ):  # not monkeypatch.undo(), which also undoes the isolated cache
        patched.setattr(
            bm25_module, "tokenize", lambda text: tokenized.append(text) or tokenize(text)
        )
        index = build_index(grown, "bm25", chunking=CHUNKING)
    assert tokenized == [NEW_DOCUMENT]  # only the new document's one chunk was tokenized
    assert any(
        m.getMessage().startswith("Grew bm25 index by 1 documents (1 chunks)")
        for m in caplog.records
    )
    meta = json.loads((index.path / "meta.json").read_text())
    assert [s["path"] for s in meta["segments"]] == [".", "segments/001"] and meta["segments"][1][
        "documents"
    ] == [300, 301]
    assert index.chunks[-1].chunk_id == len(index) - 1 and index.chunks[-1].doc_index == 300
    rebuilt = build_index(grown, "bm25", chunking=CHUNKING, use_cache=False)
    assert [c.text for c in index.chunks] == [c.text for c in rebuilt.chunks]
    fresh_process()
    reloaded = build_index(
        grown, "bm25", chunking=CHUNKING
    )  # from disk: two segments merged at query time
    for question in QUESTIONS:
        assert top10(index, question) == top10(rebuilt, question) == top10(reloaded, question), (
            question
        )
    assert index.search("vault code museum curator", 1)[0].chunk.doc_index == 300


def test_bm25_index_grows_again_from_a_grown_one(isolated_cache):
    texts = make_texts(120)
    build_index(Corpus.from_texts(texts[:100]), "bm25", chunking=CHUNKING)
    fresh_process()
    build_index(Corpus.from_texts(texts[:110]), "bm25", chunking=CHUNKING)
    fresh_process()
    third = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING)
    assert [
        s["documents"] for s in json.loads((third.path / "meta.json").read_text())["segments"]
    ] == [[0, 100], [100, 110], [110, 120]]
    rebuilt = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, use_cache=False)
    for question in QUESTIONS:
        assert top10(third, question) == top10(rebuilt, question), question


def test_a_damaged_segment_is_caught_by_its_checksum_and_rebuilt(isolated_cache, caplog):
    texts = make_texts(60)
    build_index(Corpus.from_texts(texts[:50]), "bm25", chunking=CHUNKING)
    fresh_process()
    grown = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING)
    counts = grown.path / "segments" / "001" / "bm25_counts.npy"
    data = bytearray(counts.read_bytes())
    data[-1] ^= 0xFF  # same size, other bytes
    counts.write_bytes(bytes(data))
    fresh_process()
    caplog.set_level(logging.WARNING, logger="longctx.retrieval.index")
    repaired = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING)
    assert any(
        "segments/001/bm25_counts.npy fails its xxh3_128 checksum" in r.getMessage()
        for r in caplog.records
    )
    rebuilt = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, use_cache=False)
    assert top10(repaired, QUESTIONS[0]) == top10(rebuilt, QUESTIONS[0])


def test_the_reference_bm25_engine_cannot_grow_and_is_rebuilt_whole(isolated_cache):
    texts = make_texts(40)
    build_index(Corpus.from_texts(texts[:39]), "bm25", chunking=CHUNKING, engine="rank_bm25")
    fresh_process()
    index = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, engine="rank_bm25")
    assert "segments/001" not in json.dumps(
        json.loads((index.path / "meta.json").read_text())["segments"]
    )
    assert len(index) == len(
        build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, use_cache=False).chunks
    )


# -- dense ----------------------------------------------------------------------------
@pytest.mark.parametrize("num_documents", [30, pytest.param(300, marks=pytest.mark.slow)])
def test_dense_index_of_a_grown_corpus_embeds_only_the_new_document_and_ranks_as_a_rebuild(
    isolated_cache, num_documents
):
    old = Corpus.from_texts(make_texts(num_documents))
    build_index(old, DenseRetriever(CountingEmbedder()), chunking=CHUNKING)
    grown = old.add([NEW_DOCUMENT])
    fresh_process()
    embedder = CountingEmbedder()
    index = build_index(grown, DenseRetriever(embedder), chunking=CHUNKING)
    assert embedder.embedded == 1  # the new document's one chunk, nothing else
    rebuilt = build_index(
        grown, DenseRetriever(CountingEmbedder()), chunking=CHUNKING, use_cache=False
    )
    fresh_process()
    reloaded = build_index(grown, DenseRetriever(CountingEmbedder()), chunking=CHUNKING)
    for question in QUESTIONS:
        ids = [c for c, _ in top10(rebuilt, question)]
        assert (
            [c for c, _ in top10(index, question)]
            == ids
            == [c for c, _ in top10(reloaded, question)]
        ), question
        # the old chunks keep the vectors they were embedded with; a rebuild embeds them in other
        # batches (other padding), which moves bfloat16 scores by ~1e-4, never the ranking here
        np.testing.assert_allclose(
            [s for _, s in top10(index, question)],
            [s for _, s in top10(rebuilt, question)],
            atol=2e-3,
        )
    assert index.search(QUESTIONS[-1], 1)[0].chunk.doc_index == num_documents


def test_a_prefix_index_that_vanishes_while_it_is_linked_falls_back_to_a_whole_build(
    isolated_cache, monkeypatch
):
    texts = make_texts(40)
    build_index(Corpus.from_texts(texts[:39]), "bm25", chunking=CHUNKING)
    fresh_process()

    def vanished(src, dst):
        raise FileNotFoundError(src)

    monkeypatch.setattr(growth, "_link", vanished)
    index = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING)
    assert [s["path"] for s in json.loads((index.path / "meta.json").read_text())["segments"]] == [
        "."
    ]
    rebuilt = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, use_cache=False)
    assert top10(index, QUESTIONS[0]) == top10(rebuilt, QUESTIONS[0])
    assert not list(index.path.parent.glob("*.build-*"))
