"""The embedding store behind RAPTOR's and HippoRAG's growth: a text is embedded once per embedder
and namespace across store objects (another corpus, another process), a segment that fails its
checksum is named and its texts embedded again, and many segments fold into one."""

from __future__ import annotations

import logging

import numpy as np

from longctx.graphs.index import embedding_store
from longctx.graphs.index.embedding_store import EmbeddingStore, open_store


class CountingEmbedder:
    """Deterministic vectors (the text's length and vowels), counting every text it is asked."""

    model_id = "counting"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed_documents(self, texts):
        self.asked.extend(texts)
        return np.asarray([[len(t), sum(c in "aeiou" for c in t), 1.0] for t in texts], np.float32)


def test_texts_are_embedded_once_across_stores_and_namespaces_stay_apart(tmp_path):
    emb = CountingEmbedder()
    first = open_store(tmp_path, "counting", emb, "passage")
    rows = first.embed_texts(["alpha", "beta", "alpha"])
    assert emb.asked == ["alpha", "beta"] and rows.shape == (3, 3) and (rows[0] == rows[2]).all()
    again = open_store(tmp_path, "counting", emb, "passage")  # another build, another corpus
    both = again.embed_texts(["beta", "gamma"])
    assert emb.asked == ["alpha", "beta", "gamma"] and (again.computed, again.reused) == (1, 1)
    assert (both[0] == rows[1]).all()
    open_store(tmp_path, "counting", emb, "entity").embed_texts(["alpha"])
    assert emb.asked[-1] == "alpha"  # another namespace: its own store
    memory = open_store(None, "counting", emb, "passage")
    memory.embed_texts(["alpha"])
    assert emb.asked[-1] == "alpha" and not list(tmp_path.glob("**/*.tmp"))


def test_a_corrupted_segment_is_named_removed_and_its_texts_embedded_again(tmp_path, caplog):
    emb = CountingEmbedder()
    store = open_store(tmp_path, "counting", emb, "fact")
    store.embed_texts(["one", "two"])
    (segment,) = store.folder.glob("*.npz")
    data = bytearray(segment.read_bytes())
    data[-20] ^= 0xFF
    segment.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        again = open_store(tmp_path, "counting", emb, "fact")
    assert f"embedding segment {segment} is unusable" in caplog.text and not segment.exists()
    again.embed_texts(["one", "two"])
    assert emb.asked == ["one", "two", "one", "two"]


def test_past_the_segment_limit_a_load_folds_them_into_one(tmp_path, monkeypatch):
    monkeypatch.setattr(embedding_store, "MAX_SEGMENTS", 3)
    emb = CountingEmbedder()
    for word in ("a", "bb", "ccc", "dddd"):
        open_store(tmp_path, "counting", emb, "passage").embed_texts([word])
    folded = open_store(tmp_path, "counting", emb, "passage")
    assert len(list(folded.folder.glob("*.npz"))) == 1 and len(folded.vectors) == 4
    fresh = EmbeddingStore(folded.folder, emb.embed_documents)
    fresh.embed_texts(["a", "bb", "ccc", "dddd"])
    assert fresh.computed == 0 and len(emb.asked) == 4
