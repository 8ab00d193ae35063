"""The static (model2vec) embedder (issue 51, item 1): a model2vec folder loads as is, a
sentence-transformers folder is distilled once and cached with checksums, every text is embedded
whole up to 512 tokens, and it plugs in as the ``static`` retriever, hybrid's dense side and the
embedder of RAPTOR and HippoRAG.

The default tier builds a real model2vec folder from MiniLM's own tokenizer and seeded vectors
(distilling MiniLM takes 25-80 s); the real distillation runs in the slow tier (make test-all)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from longctx.retrieval import Corpus, build_index, make_retriever
from longctx.retrieval.checksums import ChecksumMismatch
from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.embedders import EMBEDDERS, offline_minilm_path
from longctx.retrieval.retriever_registry import RETRIEVERS

model2vec = pytest.importorskip("model2vec")
static_embedder = pytest.importorskip("longctx.retrieval.static_embedder")

pytestmark = pytest.mark.model


def save_seeded_model(folder: Path, dims: int = 32) -> Path:
    """A real model2vec folder: MiniLM's tokenizer, one seeded random vector per token."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(offline_minilm_path() / "tokenizer.json"))
    vectors = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), dims))
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": dims}
    model = model2vec.StaticModel(vectors.astype(np.float32), tokenizer, config, normalize=True)
    model.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_seeded_model(tmp_path_factory.mktemp("m2v") / "seeded")


def corpus() -> Corpus:
    return Corpus.from_texts(
        [
            "The harbour master logged three tankers before the storm closed the port.",
            "Invoice INV-20931 covers the automobile fleet's quarterly earnings report.",
            "Glaciers retreat faster when summer rain falls on thin winter snow.",
            "The violinist rehearsed the concerto twice before the evening premiere.",
        ]
    )


def test_static_is_an_embedder_and_a_retriever_by_name():
    assert EMBEDDERS.get("static") is static_embedder.StaticEmbedder
    assert "static" in RETRIEVERS.names()


def test_a_model2vec_folder_loads_as_is_and_gives_unit_vectors(seeded):
    embedder = static_embedder.StaticEmbedder(str(seeded))
    vectors = embedder.embed_documents(["harbour tankers", "", "\u2603"])
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(embedder.embed_query("harbour tankers"), vectors[0], rtol=1e-6)
    # no known token: model2vec's zeros, which no index may hold, become the vocabulary's centroid
    np.testing.assert_allclose(vectors[1], vectors[2])
    assert abs(float(vectors[0] @ vectors[1])) < 0.5


def test_a_long_text_is_embedded_past_the_source_tokenizers_128_token_truncation(seeded):
    # MiniLM's tokenizer.json truncates at 128 and pads; kept, every text was its first 128 tokens
    embedder = static_embedder.StaticEmbedder(str(seeded))
    head = " ".join(["apple"] * 150)
    whole = head + " " + " ".join(["quantum physics"] * 150)
    a, b = embedder.embed_documents([head, whole])
    assert float(a @ b) < 0.9
    assert embedder.token_limit().count(["hello world", whole]) == [2, 450]
    assert embedder.token_limit().spans("hello world") == [(0, 5), (6, 11)]


def test_the_static_retriever_builds_a_real_index_that_ranks_the_shared_words_first(
    seeded, tmp_path
):
    index = build_index(corpus(), make_retriever("static", model=str(seeded)), cache_dir=tmp_path)
    hits = index.search("glaciers summer rain snow", 2)
    assert hits[0].chunk.doc_id == corpus()[2].doc_id
    again = build_index(corpus(), make_retriever("static", model=str(seeded)), cache_dir=tmp_path)
    assert again.path == index.path  # cached: nothing embedded twice


def test_hybrid_takes_static_as_its_dense_side(seeded, tmp_path):
    retriever = make_retriever("hybrid", dense="static", dense_options={"model": str(seeded)})
    index = build_index(corpus(), retriever, cache_dir=tmp_path)
    hits = index.search("INV-20931 automobile", 4)
    assert hits[0].chunk.doc_id == corpus()[1].doc_id
    assert set(hits[0].components or {}) == {"bm25", "static"}


def test_a_cached_distillation_is_reused_and_a_damaged_one_distilled_again(
    seeded, tmp_path, monkeypatch
):
    source = offline_minilm_path()
    folder = static_embedder.distilled_dir(source, 64, tmp_path)
    folder.parent.mkdir(parents=True)
    save_seeded_model(folder)
    static_embedder.write_meta(folder, source=str(source), pca_dims=64)
    distilled: list[Path] = []

    def distill_into(target: Path, src: Path, dims: int) -> None:
        distilled.append(target)
        save_seeded_model(target)
        static_embedder.write_meta(target, source=str(src), pca_dims=dims)

    monkeypatch.setattr(static_embedder, "_distill_into", distill_into)
    assert static_embedder.static_model_dir(None, 64, tmp_path) == folder
    assert distilled == []  # the cached one, checksums verified
    with open(folder / "model.safetensors", "r+b") as f:
        f.seek(200)
        f.write(b"\x00\x01\x02\x03")
    assert static_embedder.static_model_dir(None, 64, tmp_path) == folder
    assert distilled == [folder]
    with pytest.raises(ChecksumMismatch):  # an unfinished or edited meta is refused, not trusted
        meta = json.loads((folder / "meta.json").read_text())
        meta["files"]["model.safetensors"]["bytes"] += 1
        (folder / "meta.json").write_text(json.dumps(meta))
        static_embedder._checked(folder)


def test_the_cache_key_follows_the_source_files_and_the_settings(seeded, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "weights.bin").write_bytes(b"one")
    first = static_embedder.distilled_dir(source, 256, tmp_path)
    assert static_embedder.distilled_dir(source, 64, tmp_path) != first
    (source / "weights.bin").write_bytes(b"two")
    assert static_embedder.distilled_dir(source, 256, tmp_path) != first


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(EmbedderError, match="needs a local folder"):
        static_embedder.StaticEmbedder(str(tmp_path / "absent")).embed_query("x")
    with pytest.raises(EmbedderError, match="pca_dims"):
        static_embedder.StaticEmbedder(pca_dims=1)


@pytest.mark.slow  # distils MiniLM: 25-80 s, more than the default tier's budget (make test-all)
def test_minilm_is_distilled_offline_once_and_retrieves(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = static_embedder.StaticEmbedder(pca_dims=64)
    folder = static_embedder.static_model_dir(None, 64)
    assert static_embedder.is_model2vec_folder(folder)
    vectors = embedder.embed_documents([d.text for d in corpus()])
    query = embedder.embed_query("which invoice covers the car fleet's earnings?")
    assert int(np.argmax(vectors @ query)) == 1
