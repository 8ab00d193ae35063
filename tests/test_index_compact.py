"""A grown index compacts its segments into one (log-structured merge) and then scores as a fresh
build, bit for bit."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from longctx.retrieval import Corpus, build_index
from longctx.retrieval import bm25 as bm25_module
from longctx.retrieval.bm25 import BM25Retriever, tokenize
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.index import CompactionPolicy, store
from longctx.retrieval.term_counting import count_terms
from longctx.retrieval.term_counts import TermCounts
from tests.test_index_cache import CountingEmbedder
from tests.test_index_grow import CHUNKING, QUESTIONS, VOCABULARY, fresh_process, make_texts, top10

TEXTS = make_texts(130)


def segment_paths(index) -> list[str]:
    return [s["path"] for s in json.loads((index.path / "meta.json").read_text())["segments"]]


def grow_in_steps(first: int, steps: int, per_step: int, **options):
    """Index ``TEXTS[:first]``, then grow it ``steps`` times by ``per_step`` documents (a new
    process each time); every index."""
    indexes = [build_index(Corpus.from_texts(TEXTS[:first]), "bm25", chunking=CHUNKING, **options)]
    for step in range(1, steps + 1):
        fresh_process()
        indexes.append(
            build_index(
                Corpus.from_texts(TEXTS[: first + step * per_step]),
                "bm25",
                chunking=CHUNKING,
                **options,
            )
        )
    return indexes


def assert_scores_equal_a_fresh_build(index, texts: list[str]) -> None:
    fresh = build_index(Corpus.from_texts(texts), "bm25", chunking=CHUNKING, use_cache=False)
    assert [c.text for c in index.chunks] == [c.text for c in fresh.chunks]
    for question in QUESTIONS:
        np.testing.assert_array_equal(
            index.retriever.scores(question), fresh.retriever.scores(question)
        )
        assert top10(index, question) == top10(fresh, question), question


# -- the merge itself --------------------------------------------------------------------
def test_merged_counts_are_a_builds_counts_and_the_compacted_model_scores_bit_identically():
    texts = make_texts(200) + ["", "vault"]  # an empty chunk and a one-word chunk
    chunks = [Chunk(i, i, str(i), "", 0, t, 0) for i, t in enumerate(texts)]
    reference = BM25Retriever()
    reference.build(chunks)
    tokens = [tokenize(t) for t in texts]
    whole = count_terms(tokens)
    rng = random.Random(5)
    for cuts in ([202], [150, 202], [1, 100, 101, 199, 202]):
        segments = [count_terms(tokens[a:b]) for a, b in zip([0, *cuts[:-1]], cuts)]
        merged = TermCounts.concat(segments)
        assert merged.terms == whole.terms
        for name in ("indptr", "rows", "counts", "lengths"):
            assert getattr(merged, name).dtype == getattr(whole, name).dtype
            np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
        compacted = BM25Retriever()
        compacted._counts = segments
        compacted.compact()
        assert compacted._model is not None and compacted.num_chunks == 202
        for _ in range(30):
            query = " ".join(rng.choices(VOCABULARY, k=rng.randint(1, 6)))
            np.testing.assert_array_equal(compacted.scores(query), reference.scores(query))
    with pytest.raises(ValueError, match="no segments"):
        TermCounts.concat([])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_compaction_policy_refuses_a_bad_segment_count(bad):
    with pytest.raises(ValueError, match="max_segments must be a positive integer"):
        CompactionPolicy(max_segments=bad)


@pytest.mark.parametrize(
    ("max_segments", "segments", "compacts"),
    [(10, 10, False), (10, 11, True), (1, 2, True), (3, 3, False)],
)
def test_compaction_policy_compacts_past_its_segment_count(max_segments, segments, compacts):
    assert CompactionPolicy(max_segments=max_segments).compacts(segments) is compacts


# -- growing an index --------------------------------------------------------------------
def test_after_k_plus_one_growths_the_index_is_one_segment_that_scores_as_a_fresh_build(
    monkeypatch,
):
    k = CompactionPolicy().max_segments
    indexes = grow_in_steps(first=100, steps=k - 1, per_step=2)  # the default policy
    assert len(segment_paths(indexes[-1])) == k  # not compacted yet: at the policy's bound
    tokenized: list[str] = []
    fresh_process()
    grown_texts = TEXTS[: 100 + 2 * k]
    with (
        monkeypatch.context() as patched
    ):  # not monkeypatch.undo(): that would also undo the isolated cache
        patched.setattr(
            bm25_module, "tokenize", lambda text: tokenized.append(text) or tokenize(text)
        )
        compacted = build_index(
            Corpus.from_texts(grown_texts), "bm25", chunking=CHUNKING
        )  # growth K+1: compacted
    assert tokenized == [
        c.text for c in compacted.chunks if c.doc_index >= len(grown_texts) - 2
    ]  # the new documents' chunks only
    meta = json.loads((compacted.path / "meta.json").read_text())
    assert (
        segment_paths(compacted) == ["."]
        and meta["compacted_segments"] == k + 1
        and meta["segments"][0]["chunks"] == [0, len(compacted)]
    )
    assert not (compacted.path / "segments").exists()
    assert {"bm25s/data.csc.index.npy", "bm25_counts.npy", "chunks.jsonl"} <= set(
        meta["files"]
    )  # checksummed like a build
    assert_scores_equal_a_fresh_build(compacted, grown_texts)  # in the process that compacted
    fresh_process()
    reloaded = build_index(Corpus.from_texts(grown_texts), "bm25", chunking=CHUNKING)
    assert (
        segment_paths(reloaded) == ["."] and reloaded.retriever._model is not None
    )  # scored by bm25s, not from counts
    assert_scores_equal_a_fresh_build(reloaded, grown_texts)
    fresh_process()
    regrown = build_index(
        Corpus.from_texts(TEXTS[: 100 + 2 * k + 3]), "bm25", chunking=CHUNKING
    )  # the compacted index grows on
    assert segment_paths(regrown) == [".", "segments/001"]
    assert_scores_equal_a_fresh_build(regrown, TEXTS[: 100 + 2 * k + 3])


def test_segments_never_exceed_the_policy_over_many_growths():
    policy = CompactionPolicy(max_segments=3)
    indexes = grow_in_steps(first=100, steps=7, per_step=3, compaction=policy)
    assert [len(segment_paths(i)) for i in indexes] == [1, 2, 3, 1, 2, 3, 1, 2]
    fresh_process()
    assert_scores_equal_a_fresh_build(
        build_index(Corpus.from_texts(TEXTS[:121]), "bm25", chunking=CHUNKING, compaction=policy),
        TEXTS[:121],
    )


def test_compaction_is_not_repeated_on_loads(monkeypatch):
    policy = CompactionPolicy(max_segments=2)
    indexes = grow_in_steps(first=100, steps=2, per_step=5, compaction=policy)
    assert [len(segment_paths(i)) for i in indexes] == [1, 2, 1]
    compactions: list[int] = []
    original = BM25Retriever.compact
    monkeypatch.setattr(
        BM25Retriever, "compact", lambda self: compactions.append(1) or original(self)
    )
    before = {
        p: (p.stat().st_mtime_ns, p.read_bytes())
        for p in (indexes[1].path / "meta.json", indexes[2].path / "meta.json")
    }
    for _ in range(3):
        for n in (105, 110):  # a grown index at the bound, and the compacted one
            fresh_process()
            build_index(Corpus.from_texts(TEXTS[:n]), "bm25", chunking=CHUNKING, compaction=policy)
    assert compactions == []
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before} == before


# -- a kill during compaction ----------------------------------------------------------------
def _fail(*args, **kwargs):
    raise KeyboardInterrupt("killed during compaction")


@pytest.mark.parametrize("where", ["merging counts", "writing the index"])
def test_a_kill_in_compaction_leaves_the_old_segments_loadable_and_the_next_growth_compacts(
    monkeypatch, where
):
    policy = CompactionPolicy(max_segments=2)
    indexes = grow_in_steps(first=100, steps=1, per_step=5, compaction=policy)
    assert segment_paths(indexes[-1]) == [".", "segments/001"]
    fresh_process()
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        if where == "merging counts":
            patched.setattr(TermCounts, "concat", _fail)
        else:
            patched.setattr(
                store, "fsync_tree", _fail
            )  # every file of the compacted index written, not yet renamed
        build_index(Corpus.from_texts(TEXTS[:110]), "bm25", chunking=CHUNKING, compaction=policy)
    root = indexes[-1].path.parent
    assert not list(root.glob("*.build-*")) and [
        p.name for p in root.iterdir() if (p / "meta.json").exists()
    ] == [i.path.name for i in indexes]
    fresh_process()
    old = build_index(
        Corpus.from_texts(TEXTS[:105]), "bm25", chunking=CHUNKING, compaction=policy
    )  # the two segments, untouched
    assert segment_paths(old) == [".", "segments/001"]
    assert_scores_equal_a_fresh_build(old, TEXTS[:105])
    fresh_process()
    compacted = build_index(
        Corpus.from_texts(TEXTS[:110]), "bm25", chunking=CHUNKING, compaction=policy
    )
    assert segment_paths(compacted) == ["."]
    assert_scores_equal_a_fresh_build(compacted, TEXTS[:110])


_KILLED_CHILD = """
import json, os, sys
from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval.index import CompactionPolicy, store
# killed with the compacted index written, before its rename
store.fsync_tree = lambda folder: os._exit(9)
texts = json.loads(open(sys.argv[1]).read())
chunking, compaction = ChunkingConfig(unit="words", size=40), CompactionPolicy(max_segments=2)
build_index(Corpus.from_texts(texts), "bm25", chunking=chunking, compaction=compaction)
"""


def test_a_killed_compaction_leaves_the_old_segments_and_its_leftovers_are_cleared(
    isolated_cache, tmp_path
):
    policy = CompactionPolicy(max_segments=2)
    indexes = grow_in_steps(first=100, steps=1, per_step=5, compaction=policy)
    (tmp_path / "texts.json").write_text(json.dumps(TEXTS[:110]))
    root_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(isolated_cache), "PYTHONPATH": str(root_dir)}
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CHILD, str(tmp_path / "texts.json")],
        env=env,
        cwd=root_dir,
        timeout=120,
    )
    assert child.returncode == 9
    root = indexes[-1].path.parent
    assert (
        len(list(root.glob("*.build-*"))) == 1
    )  # the killed compaction's output, never renamed into place
    fresh_process()
    old = build_index(Corpus.from_texts(TEXTS[:105]), "bm25", chunking=CHUNKING, compaction=policy)
    assert segment_paths(old) == [".", "segments/001"]
    assert_scores_equal_a_fresh_build(old, TEXTS[:105])
    compacted = build_index(
        Corpus.from_texts(TEXTS[:110]), "bm25", chunking=CHUNKING, compaction=policy
    )
    assert segment_paths(compacted) == ["."] and not list(root.glob("*.build-*"))
    assert_scores_equal_a_fresh_build(compacted, TEXTS[:110])


# -- dense ----------------------------------------------------------------------------------
def test_dense_segments_are_compacted_without_embedding_again():
    policy = CompactionPolicy(max_segments=2)
    texts = make_texts(32)
    build_index(
        Corpus.from_texts(texts[:30]),
        DenseRetriever(CountingEmbedder()),
        chunking=CHUNKING,
        compaction=policy,
    )
    fresh_process()
    build_index(
        Corpus.from_texts(texts[:31]),
        DenseRetriever(CountingEmbedder()),
        chunking=CHUNKING,
        compaction=policy,
    )
    fresh_process()
    embedder = CountingEmbedder()
    index = build_index(
        Corpus.from_texts(texts), DenseRetriever(embedder), chunking=CHUNKING, compaction=policy
    )
    assert embedder.embedded == sum(c.doc_index == 31 for c in index.chunks) and segment_paths(
        index
    ) == ["."]  # the last document's chunks only
    fresh_process()
    reloaded = build_index(
        Corpus.from_texts(texts),
        DenseRetriever(CountingEmbedder()),
        chunking=CHUNKING,
        compaction=policy,
    )
    assert reloaded.retriever._index is not None and index.retriever._index is not None
    np.testing.assert_array_equal(
        reloaded.retriever._index.vectors(0, len(reloaded)),
        index.retriever._index.vectors(0, len(index)),
    )
    for question in QUESTIONS[:3]:
        assert top10(reloaded, question) == top10(index, question)
