"""Embedding replies are untrusted input (issue #46 items 8, 17 and 18), against the recording
server's real ``/v1/embeddings``: NaN, infinite or all-zero vectors and a dimension that changes
under the same model name are refused with one line naming the server and leave nothing in the
cache; RAPTOR clusters the server's vectors exactly as returned (the official code's float64
lists, not normalised again); HippoRAG sends passages as the official OpenAI path does (newlines
as spaces)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longctx import answer, make_chat_model
from longctx.graphs.hipporag import build as hippo_build
from longctx.graphs.index.embedding_store import EmbeddingStore, open_store
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.raptor import graph as raptor_graph
from longctx.graphs.raptor import tree as raptor_tree
from longctx.retrieval import Corpus
from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.embedders import OpenAIEmbedder
from tests.recording_server import RecordingServer, bag_of_words_vector

DOCS = [
    f"Report {i} about {w} lamps near the river and the market."
    for i, w in enumerate("red blue green amber violet".split())
]
POISON = {"nan": math.nan, "inf": math.inf, "zero": 0.0}


def poisoned(kind: str, marker: str = "green"):
    """Bag-of-words vectors, but ``kind`` (NaN, infinity, zeros) for a text holding ``marker``."""

    def embed(text: str) -> list[float]:
        vec = bag_of_words_vector(text)
        if marker in text:
            return [POISON[kind]] * len(vec) if kind == "zero" else [POISON[kind], *vec[1:]]
        return vec

    return embed


def _service(server: RecordingServer, cache) -> RetrievalService:
    settings = RetrievalSettings(
        retriever="openai", retriever_options={"base_url": server.url, "api_key": "test"}
    )
    return RetrievalService(settings=settings, cache_dir=cache)


def _top(service: RetrievalService, corpus: Corpus, question: str) -> list[str]:
    index = service.build_index(corpus)
    return [h.chunk.doc_id for h in index.search(question, 3)]


@pytest.mark.parametrize("kind", sorted(POISON))
def test_a_poisoned_document_vector_is_refused_naming_the_server_and_nothing_is_cached(
    tmp_path, kind
):
    corpus = Corpus.from_texts(DOCS)
    with RecordingServer(embed=poisoned(kind)) as server:
        with pytest.raises(EmbedderError) as caught:
            _service(server, tmp_path / "cache").build_index(corpus)
        message = str(caught.value)
        assert server.url in message and "\n" not in message
        server.embed = bag_of_words_vector  # the server recovers
        healed = _top(_service(server, tmp_path / "cache"), corpus, "green lamps")
        fresh = _top(_service(server, tmp_path / "fresh"), corpus, "green lamps")
    assert healed == fresh


def test_a_nan_query_vector_is_refused_not_ranked(tmp_path):
    corpus = Corpus.from_texts(DOCS)
    with RecordingServer() as server:
        service = _service(server, tmp_path)
        index = service.build_index(corpus)
        server.embed = poisoned("nan", marker="which")
        with pytest.raises(EmbedderError, match="NaN or infinite") as caught:
            index.search("which green lamps", 3)
    assert server.url in str(caught.value)


def test_a_dimension_that_changes_under_the_same_model_name_is_refused(tmp_path):
    corpus = Corpus.from_texts(DOCS)
    with RecordingServer() as server:
        _service(server, tmp_path).build_index(corpus)
        server.embed = lambda text: bag_of_words_vector(text)[:32]  # another model, same name
        index = _service(server, tmp_path).build_index(corpus)  # the cached index, 64 dimensions
        with pytest.raises(EmbedderError, match="32-dimensional vectors where 64") as caught:
            index.search("green lamps", 3)
        assert server.url in str(caught.value)
        # within one embedder: a batch of another dimension than its first reply
        embedder = OpenAIEmbedder("stub", base_url=server.url, api_key="test", batch_size=1)
        server.embed = lambda text: bag_of_words_vector(text)[: 8 if "blue" in text else 64]
        with pytest.raises(EmbedderError, match="8-dimensional vectors where 64"):
            embedder.embed_documents(DOCS)


def test_the_embedding_store_refuses_vectors_of_another_dimension(tmp_path):
    """HippoRAG's and RAPTOR's shared store: a model changed under its name ends in one line, not a
    stacking or FAISS error."""
    with RecordingServer() as server:
        first = OpenAIEmbedder("stub", base_url=server.url, api_key="test")
        open_store(tmp_path, "openai", first, "passage").embed_texts(DOCS[:2])
        server.embed = lambda text: bag_of_words_vector(text)[:32]
        later = OpenAIEmbedder("stub", base_url=server.url, api_key="test")
        with pytest.raises(EmbedderError, match="32-dimensional vectors where 64") as caught:
            open_store(tmp_path, "openai", later, "passage").embed_texts(DOCS)
    assert server.url in str(caught.value)


@pytest.mark.parametrize(
    "hostile",
    [
        lambda data: data[:-1],  # a row missing
        lambda data: [dict(d, index=0) for d in data],  # every row claims index 0
        lambda data: [dict(d, index=d["index"] + 0.5) for d in data],  # fractional indexes
        lambda data: [dict(d, embedding="lots") for d in data],  # not a vector
        lambda data: [],  # no rows at all
        lambda data: None,
    ],
    ids=["missing-row", "duplicate-index", "fractional-index", "string", "empty", "null"],
)
def test_a_reply_without_one_vector_per_text_is_refused_naming_the_server(hostile):
    with RecordingServer(embedding_data=hostile) as server:
        embedder = OpenAIEmbedder("stub", base_url=server.url, api_key="test", max_retries=0)
        with pytest.raises(EmbedderError) as caught:
            embedder.embed_documents(DOCS[:3])
    assert server.url in str(caught.value) and "\n" not in str(caught.value)


def test_a_store_segment_holding_a_nan_vector_is_embedded_again(tmp_path):
    """A store poisoned before replies were checked heals: its segment is dropped
    and re-embedded."""
    with RecordingServer() as server:
        good = OpenAIEmbedder("stub", base_url=server.url, api_key="test")
        folder = tmp_path / "passage"
        old = EmbeddingStore(folder, lambda texts: np.full((len(texts), 64), np.nan))
        old.embed_texts(DOCS[:2])  # what an unchecked build wrote
        healed = EmbeddingStore(folder, good.embed_documents).embed_texts(DOCS[:2])
    assert np.allclose(healed, [bag_of_words_vector(t) for t in DOCS[:2]], atol=1e-6)
    assert len(server.embedding_requests) == 1


def test_local_embedders_vectors_go_through_the_same_check():
    """The check the sentence-transformers and Contriever embedders apply to what their
    model emits."""
    from longctx.retrieval.embedder_base import checked_vectors

    good = np.eye(3, dtype=np.float32)
    assert checked_vectors(good, 3, "embedding model 'm'") is good
    for bad in (np.nan, np.inf):
        rows = good.copy()
        rows[1, 2] = bad
        with pytest.raises(
            EmbedderError, match="model 'm' returned a NaN or infinite vector for text 1"
        ):
            checked_vectors(rows, 3, "embedding model 'm'")
    with pytest.raises(EmbedderError, match="all-zero vector for text 0"):
        checked_vectors(np.zeros((2, 3)), 2, "embedding model 'm'")


def off_unit(text: str) -> list[float]:
    """A float64 vector of norm 0.8, with digits float32 cannot hold: what clustering must see
    as sent."""
    vec = np.asarray(bag_of_words_vector(text), dtype=np.float64) * 0.8
    vec += (np.arange(len(vec)) + 1) * 1e-12
    return vec.tolist()


@pytest.fixture
def fresh_raptor():
    raptor_graph._TREES.clear()
    raptor_graph._LOADED._embedders.clear()  # the openai embedder holds the server URL
    yield
    raptor_graph._TREES.clear()
    raptor_graph._LOADED._embedders.clear()


@pytest.mark.slow  # UMAP on 60 leaves: ~13 s on 2 cores; make test-all runs it
def test_raptor_clusters_the_servers_vectors_as_returned(tmp_path, monkeypatch, fresh_raptor):
    from tests.test_raptor import corpus, reply

    seen: list[np.ndarray] = []
    clusters = raptor_tree.cluster_nodes

    def recording(embeddings, *args, **kwargs):
        seen.append(np.array(embeddings))
        return clusters(embeddings, *args, **kwargs)

    monkeypatch.setattr(raptor_tree, "cluster_nodes", recording)  # a spy: it clusters as before
    with RecordingServer(reply, embed=off_unit) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        answer(
            corpus(12),
            "What did the team in city 2 measure?",
            strategy="raptor",
            llm=llm,
            embedder="openai",
            embedder_model="stub-embed",
            cache_dir=tmp_path,
        )
    leaves = server.embedding_requests[0]["input"]
    assert len(leaves) == 12 and seen
    assert seen[0].dtype == np.float64
    assert np.array_equal(seen[0], np.asarray([off_unit(t) for t in leaves]))


@pytest.fixture
def fresh_hipporag():
    hippo_build.forget_graphs()
    hippo_build._LOADED._embedders.clear()
    yield
    hippo_build.forget_graphs()
    hippo_build._LOADED._embedders.clear()


def test_hipporag_sends_passages_to_openai_as_the_official_path(
    tmp_path, monkeypatch, fresh_hipporag
):
    from tests.test_hipporag_growth import DOCS as PASSAGES
    from tests.test_hipporag_growth import reply

    corpus = Corpus.from_texts(PASSAGES[:3], titles=["t0", "t1", "t2"])
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        answer(
            corpus,
            "Who met\nBirch?",
            strategy="hipporag",
            llm=llm,
            embedder="openai",
            embedder_model="stub-embed",
            cache_dir=tmp_path,
        )
    sent = [t for r in server.embedding_requests for t in r["input"]]
    assert [f"t{i} {p}" for i, p in enumerate(PASSAGES[:3])] == [
        t for t in sent if t.startswith("t")
    ]
    assert "Who met Birch?" in sent and not [t for t in sent if "\n" in t]
