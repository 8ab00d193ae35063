import json

import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import SentenceTransformerEmbedder


class CountingEmbedder(SentenceTransformerEmbedder):
    """The real MiniLM embedder, counting how many texts it embeds (to prove reuse); like the
    library's own, its instances share the process's loaded model."""

    def __init__(self, fail_after: int | None = None):
        super().__init__()
        self.embedded = 0
        self.fail_after = fail_after

    def embed_documents(self, texts):
        if self.fail_after is not None and self.embedded >= self.fail_after:
            raise KeyboardInterrupt("simulated crash")
        self.embedded += len(texts)
        return super().embed_documents(texts)


def fresh_process():
    index_module.clear_memory_cache()


def test_second_build_loads_from_disk(isolated_cache):
    corpus = Corpus.from_texts(["alpha beta gamma"] * 3, duplicates="keep")
    first = build_index(corpus, "bm25")
    assert (first.path / "meta.json").exists() and first.path.parent.parent == isolated_cache
    assert build_index(corpus, "bm25") is first  # in-process cache
    fresh_process()
    second = build_index(corpus, "bm25")
    assert second is not first and second.path == first.path
    assert [c.text for c in second.chunks] == [c.text for c in first.chunks]
    meta = json.loads((first.path / "meta.json").read_text())
    assert meta["corpus_fingerprint"] == corpus.fingerprint and meta["num_chunks"] == len(first)


@pytest.mark.parametrize(
    "change",
    [
        dict(corpus=["alpha beta gamma", "delta CHANGED"]),
        dict(chunking=ChunkingConfig(size=2)),
        dict(chunking=ChunkingConfig(unit="words", size=512)),
        dict(engine="rank_bm25"),
        dict(k1=1.2),
    ],
)
def test_changed_corpus_or_config_never_reuses_a_stale_index(change):
    base = dict(
        corpus=["alpha beta gamma", "delta epsilon"],
        chunking=ChunkingConfig(),
        engine="bm25s",
        k1=1.5,
    )
    first = build_index(
        Corpus.from_texts(base["corpus"]),
        "bm25",
        chunking=base["chunking"],
        engine=base["engine"],
        k1=base["k1"],
    )
    fresh_process()
    args = {**base, **change}
    other = build_index(
        Corpus.from_texts(args["corpus"]),
        "bm25",
        chunking=args["chunking"],
        engine=args["engine"],
        k1=args["k1"],
    )
    assert other.key != first.key and other.path != first.path


def test_corrupt_index_is_rebuilt():
    corpus = Corpus.from_texts(["alpha beta gamma", "delta epsilon"])
    first = build_index(corpus, "bm25")
    (first.path / "chunks.jsonl").write_text("{broken")
    fresh_process()
    rebuilt = build_index(corpus, "bm25")
    assert [h.chunk.doc_index for h in rebuilt.search("delta", 1)] == [1]
    assert json.loads((rebuilt.path / "chunks.jsonl").read_text().splitlines()[0])["chunk_id"] == 0


def test_no_cache_builds_in_memory(isolated_cache):
    index = build_index(Corpus.from_texts(["alpha"]), "bm25", use_cache=False)
    assert index.path is None and not (isolated_cache / "indexes").exists()


def test_interrupted_dense_build_resumes_from_finished_shards():
    corpus = Corpus.from_texts(
        [f"Document number {i} talks about topic {i % 7}." for i in range(40)]
    )
    chunking = ChunkingConfig(size=16)
    crashing = DenseRetriever(CountingEmbedder(fail_after=20), shard_size=10)
    with pytest.raises(KeyboardInterrupt):
        build_index(corpus, crashing, chunking=chunking)
    fresh_process()
    resumed_embedder = CountingEmbedder()
    resumed = build_index(
        corpus, DenseRetriever(resumed_embedder, shard_size=10), chunking=chunking
    )
    assert resumed_embedder.embedded == 20  # only the two unfinished shards
    fresh_process()
    reference = build_index(
        corpus,
        DenseRetriever(CountingEmbedder(), shard_size=10),
        chunking=chunking,
        use_cache=False,
    )
    q = "topic 3"
    np.testing.assert_allclose(
        [h.score for h in resumed.search(q, 5)],
        [h.score for h in reference.search(q, 5)],
        rtol=1e-5,
    )
    assert not (resumed.path.parent / (resumed.path.name + ".partial")).exists()
