"""RAPTOR over a grown and an edited corpus, against the recording server (summaries and
embeddings): a grown corpus embeds only its new leaves and new summaries and asks only the
summaries whose cluster text is new, and its tree equals a fresh build of it (same seed, same
clusters) for fewer calls; a removed or replaced document's text reaches no request and no
retrieved node."""

from __future__ import annotations

import pytest

from longctx import answer, make_chat_model
from longctx.graphs.raptor import graph as raptor_graph
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.prompts import SUMMARY_SYSTEM, SUMMARY_TEMPLATE, node_context
from longctx.graphs.raptor.store import tree_key
from longctx.graphs.raptor.tree import Tree
from longctx.retrieval import Corpus
from longctx.retrieval.contract.document import Document
from tests.recording_server import RecordingServer, prompt_of
from tests.test_raptor import QUESTIONS, corpus, reply

OPTIONS = {"embedder": "openai", "embedder_model": "stub-embed", "concurrency": 4}
NEW = (
    "Report 90 about lamps. The lamp in the garden by the river was copper and its signal was "
    "seen from the forest."
)
GONE = "Report 91 about quokkas. A quokka crossed the market at noon and the harbour watched it."
EDITED_OLD = "Report 92 about zinnias. Zinnias grew in the garden where the lamp stood."


@pytest.fixture(autouse=True)
def fresh_memory():
    raptor_graph._TREES.clear()
    # the openai embedder holds the previous test's server URL
    raptor_graph._LOADED._embedders.clear()
    yield
    raptor_graph._TREES.clear()
    raptor_graph._LOADED._embedders.clear()


def _tree(c: Corpus, llm) -> Tree:
    return raptor_graph._TREES[tree_key(c, RaptorConfig(**OPTIONS), llm)]


def _contexts(tree: Tree) -> set[str]:
    """Each summary's cluster text, as its request holds it."""
    return {node_context([tree.nodes[c].text for c in n.children]) for n in tree.nodes if n.layer}


def _asked(requests: list[dict]) -> list[str]:
    """The cluster text of every summary request."""
    prefix, suffix = SUMMARY_TEMPLATE.split("{context}")
    return [
        r["messages"][1]["content"].removeprefix(prefix).removesuffix(suffix)
        for r in requests
        if r["messages"][0]["content"] == SUMMARY_SYSTEM
    ]


@pytest.mark.slow  # ~30 s on 2 shared cores: three trees, UMAP's numba compilation
def test_a_grown_corpus_asks_and_embeds_only_what_is_new_and_equals_a_fresh_build(
    tmp_path, monkeypatch
):
    base = Corpus.from_documents(
        [
            *corpus(24).documents,
            Document(doc_id="gone", text=GONE, title="g"),
            Document(doc_id="edit", text=EDITED_OLD, title="e"),
        ]
    )
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        run = dict(strategy="raptor", llm=llm, **OPTIONS)
        answer(base, QUESTIONS[0], cache_dir=tmp_path / "shared", **run)
        parent = _tree(base, llm)

        grown = base.add([Document(doc_id="new", text=NEW, title="n")])
        chats, embeds = len(server.requests), len(server.embedding_requests)
        result = answer(grown, QUESTIONS[1], cache_dir=tmp_path / "shared", **run)
        tree = _tree(grown, llm)
        new_contexts = _contexts(tree) - _contexts(parent)
        assert sorted(_asked(server.requests[chats:])) == sorted(new_contexts)
        embedded = [t for r in server.embedding_requests[embeds:] for t in r["input"]]
        new_leaves = [n.text for n in tree.layer(0) if n.docs == ("new",)]
        new_summaries = {n.text for n in tree.nodes if n.layer} - {
            n.text for n in parent.nodes if n.layer
        }
        assert new_leaves and set(new_leaves) <= set(embedded)
        assert set(embedded) - {QUESTIONS[1]} <= set(new_leaves) | new_summaries
        step = next(s for s in result.steps if s["node"] == "build_tree")
        assert step["leaves_embedded"] == len(new_leaves) and step["summaries_asked"] == len(
            new_contexts
        )
        assert (
            step["summaries_reused"]
            == sum(1 for n in tree.nodes if n.layer) - len(new_contexts)
            > 0
        )

        chats = len(server.requests)
        raptor_graph._TREES.clear()
        fresh = answer(grown, QUESTIONS[1], cache_dir=tmp_path / "fresh", **run)
        again = _tree(grown, llm)
        assert [(n.layer, n.text, n.children, n.docs) for n in again.nodes] == [
            (n.layer, n.text, n.children, n.docs) for n in tree.nodes
        ]
        assert (again.embeddings == tree.embeddings).all()
        assert (
            fresh.usage.index_llm_calls == len(_asked(server.requests[chats:])) > len(new_contexts)
        )

        edited = grown.update(
            Document(
                doc_id="edit", text="Report 92 about tulips. Tulips grew by the river.", title="e"
            )
        )
        edited = edited.remove("gone")
        chats, embeds = len(server.requests), len(server.embedding_requests)
        results = [
            answer(edited, q, cache_dir=tmp_path / "shared", **run)
            for q in ("Where did the quokka cross?", "What grew in the garden?")
        ]
        sent = [prompt_of(r) for r in server.requests[chats:]] + [
            t for r in server.embedding_requests[embeds:] for t in r["input"]
        ]
        retrieved = [e.text for a in results for e in a.evidence]
        assert retrieved and not [
            t for t in sent + retrieved if "quokka crossed" in t.lower() or "zinnia" in t.lower()
        ]
