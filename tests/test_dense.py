import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval.embedder_base import warn_if_truncated
from longctx.retrieval.embedders import (
    ContrieverEmbedder,
    SentenceTransformerEmbedder,
    offline_minilm_path,
)
from longctx.retrieval.faiss_index import VectorIndex


def test_faiss_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(100, 16)).astype(np.float32)
    index = VectorIndex(16)
    index.add(vectors)
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path)
    query = vectors[42]
    assert loaded.search(query, 5) == index.search(query, 5)
    assert loaded.search(query, 1)[0][0] == int(np.argmax(vectors @ query))
    with pytest.raises(ValueError):
        index.add(np.zeros((2, 8), np.float32))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 9])
def test_exactly_tied_chunks_come_lowest_id_first_and_the_cut_takes_the_lowest(k):
    """Identical vectors (a chunk and its copies) tie exactly; FAISS's heap leaves them last
    id first."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    twins = [0, 3, 9, 17, 25, 33, 39]
    vectors[twins] = vectors[0]
    index = VectorIndex(8)
    index.add(vectors)
    found = index.search(vectors[0], k)
    assert [i for i, _ in found][: min(k, 7)] == twins[: min(k, 7)] and len(found) == k
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_the_indexing_bar_names_the_openai_embedders_server_not_torch(tmp_path, capsys):
    from longctx.retrieval.chunking import Chunk
    from longctx.retrieval.dense import DenseRetriever
    from longctx.retrieval.embedders import OpenAIEmbedder
    from tests.recording_server import RecordingServer

    chunks = [Chunk(i, 0, "d", "d", i, f"text {i}", 2) for i in range(3)]
    with RecordingServer() as server:
        embedder = OpenAIEmbedder("emb", base_url=server.url, api_key="x")
        DenseRetriever(embedder).build(chunks, work_dir=tmp_path, show_progress=True)
    bar = capsys.readouterr().err
    assert "Indexing: embedding (emb, OpenAI-compatible server)" in bar and "torch" not in bar


def test_minilm_is_found_offline_and_embeds_normalized_vectors():
    assert (offline_minilm_path() / "config.json").exists()
    emb = SentenceTransformerEmbedder()
    vecs = emb.embed_documents(["a cat on a mat", "quarterly revenue grew"])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert emb.max_input_tokens == 256


def test_embedders_of_one_model_share_the_loaded_model():
    """A build makes several embedders (the index's, the chunk fitter's, a hybrid's): one load."""
    first = SentenceTransformerEmbedder()
    assert SentenceTransformerEmbedder().model is first.model is first.unloaded().model


def test_dense_retriever_finds_the_semantically_related_chunk():
    corpus = Corpus.from_texts(
        [
            "The orchestra performed Beethoven's ninth symphony to a full concert hall.",
            "Quarterly revenue rose 12 percent thanks to strong sales of electric cars.",
            "The football team won the championship after a dramatic penalty shootout.",
        ]
    )
    index = build_index(corpus, "dense")
    hits = index.search("How much did the company's income grow?", 3)
    assert hits[0].chunk.doc_index == 1
    assert hits[0].score > hits[1].score


def test_overlong_chunks_warn_about_the_256_word_piece_limit():
    emb = SentenceTransformerEmbedder()
    with pytest.warns(
        UserWarning,
        match=(
            r"^1 of 2 chunks exceed the 256 all-MiniLM-L6-v2 word pieces .* \(146 tokens dropped "
            r"in all"
        ),
    ):
        warn_if_truncated(emb, ["word " * 400, "short"])


def test_contriever_mean_pooling_on_a_local_bert_checkpoint():
    """Contriever's recipe on any local BERT: here the MiniLM folder, loaded by transformers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = str(offline_minilm_path())
    emb = ContrieverEmbedder(path)
    texts = ["short text", "a somewhat longer piece of text with more tokens"]
    got = emb.embed_documents(texts)
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    for text, row in zip(texts, got):
        with torch.inference_mode():
            hidden = model(**tok(text, return_tensors="pt")).last_hidden_state[0]
        np.testing.assert_allclose(
            row, hidden.mean(0).numpy(), rtol=1e-4, atol=1e-5
        )  # unpadded mean


def test_contriever_retriever_through_the_registry(planted_corpus):
    index = build_index(
        planted_corpus,
        "contriever",
        model=str(offline_minilm_path()),
        chunking=ChunkingConfig(unit="words", size=60),
    )
    assert index.retriever.name == "contriever"
    assert any(
        h.chunk.title == "Vault"
        for h in index.search("What is the secret code of the museum vault?", 3)
    )


def test_missing_contriever_checkpoint_offline_gives_a_clear_error():
    """Offline (set by conftest before any hub import): a hub name fails at once, naming the fix."""
    import os

    from longctx.retrieval.embedder_base import EmbedderError

    assert os.environ["HF_HUB_OFFLINE"] == "1"

    with pytest.raises(EmbedderError, match="local folder"):
        ContrieverEmbedder("facebook/contriever-msmarco").embed_documents(["x"])
