"""HippoRAG over a grown and an edited corpus, against the recording server (chat and embeddings):
only the new passages get OpenIE and embeddings (``HippoRAG.index``'s ``insert_strings``), the
graph of the grown, updated or shrunk corpus equals a fresh build of it (nodes, edges, weights,
vectors, and the PPR ranking of five questions), and a removed or replaced passage's text reaches
no request."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from longctx import answer, make_chat_model
from longctx.graphs.hipporag import build
from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.retrieve import fact_scores, rank_passages
from longctx.graphs.hipporag.store import graph_key
from longctx.retrieval import Corpus
from longctx.retrieval.contract.document import Document
from tests.recording_server import RecordingServer, bag_of_words_vector, prompt_of

NAMES = "Alder Birch Cedar Dahlia Elm Fern Gorse Hazel Iris Juniper Kale Laurel".split()
DOCS = [f"{NAMES[i]} met {NAMES[i + 1]} near {NAMES[(i + 5) % 12]} in town {i}." for i in range(6)]
NEW = "Juniper met Alder near Laurel in town nine."
#: Text that leaves the corpus (a removed document; an edited document's old version).
GONE = "Quokka met Wombat near Xerus in town seven."
EDITED_OLD = "Yarrow met Zinnia near Birch in town eight."
QUESTIONS = [
    "Who met Birch?",
    "Where did Elm go?",
    "Who was near Cedar?",
    "Which town had Iris?",
    "Who met Juniper?",
]
OPTIONS = {"embedder": "openai", "embedder_model": "stub-embed", "concurrency": 2}


def _entities(text: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"\b[A-Z][a-z]+\b", text)))


def reply(request: dict) -> str:
    """NER: the capitalised words of the passage; triples: each entity meets the next; the filter
    keeps its first candidate."""
    prompt, last = prompt_of(request), request["messages"][-1]["content"]
    if "RDF" in prompt:
        names = _entities(last.split("```\n")[1].split("\n```")[0])
        return json.dumps({"triples": [[a, "meets", b] for a, b in zip(names, names[1:])]})
    if "extract named entities" in prompt:
        return json.dumps({"named_entities": _entities(last)})
    if "fact_before_filter" in prompt:
        facts = json.loads(last.split("[[ ## fact_before_filter ## ]]\n")[1].split("\n\n")[0])[
            "fact"
        ]
        return (
            f"[[ ## fact_after_filter ## ]]\n{json.dumps({'fact': facts[:1]})}\n\n"
            "[[ ## completed ## ]]"
        )
    return "Answer: Alder"


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    build.forget_graphs()
    build._LOADED._embedders.clear()  # the openai embedder holds the previous test's server URL
    yield
    build.forget_graphs()
    build._LOADED._embedders.clear()


def _openie_passages(requests: list[dict]) -> list[str]:
    """The passage every NER request was about."""
    return [
        r["messages"][-1]["content"] for r in requests if "extract named entities" in prompt_of(r)
    ]


def _embedded(requests: list[dict]) -> list[str]:
    return [t for r in requests for t in r["input"]]


def _graph(corpus: Corpus, llm) -> build.LoadedGraph:
    return build._LOADED[graph_key(corpus, HippoRAGConfig(**OPTIONS), llm)]


def _same_graph(a: build.LoadedGraph, b: build.LoadedGraph) -> None:
    ka, kb = a.kg, b.kg
    assert (ka.phrases, ka.passages, ka.facts, ka.phrase_passages) == (
        kb.phrases,
        kb.passages,
        kb.facts,
        kb.phrase_passages,
    )
    assert (ka.edges, ka.weights) == (kb.edges, kb.weights)
    assert np.array_equal(ka.fact_vectors, kb.fact_vectors) and np.array_equal(
        ka.passage_vectors, kb.passage_vectors
    )
    for question in QUESTIONS:
        query = np.asarray(bag_of_words_vector(question), dtype=np.float32)
        rankings = []
        for g in (a, b):
            scores = fact_scores(g.kg, query)
            top = [int(i) for i in np.argsort(-scores)[:2]]
            facts, kept = [g.kg.facts[i] for i in top], [float(scores[i]) for i in top]
            r = rank_passages(
                g.kg,
                g.graph,
                query,
                facts,
                kept,
                link_top_k=5,
                passage_node_weight=0.05,
                damping=0.5,
            )
            rankings.append((r.mode, r.order.tolist(), r.scores.tolist()))
        assert rankings[0] == rankings[1] and rankings[0][0] == "ppr"


def test_growth_embeds_and_extracts_only_new_passages_and_edits_leave_no_trace(
    tmp_path, monkeypatch
):
    shared, fresh = tmp_path / "shared", tmp_path / "fresh"
    base = Corpus.from_texts([*DOCS, GONE, EDITED_OLD], titles=[f"t{i}" for i in range(8)])
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        first = answer(
            base, QUESTIONS[0], strategy="hipporag", llm=llm, cache_dir=shared, **OPTIONS
        )
        assert first.usage.index_llm_calls == 16  # NER + triples per passage

        grown = base.add([Document(doc_id="new", text=NEW, title="t-new")])
        chats, embeds = len(server.requests), len(server.embedding_requests)
        result = answer(
            grown, QUESTIONS[1], strategy="hipporag", llm=llm, cache_dir=shared, **OPTIONS
        )
        assert _openie_passages(server.requests[chats:]) == [f"t-new\n{NEW}"]
        assert result.usage.index_llm_calls == 2
        embedded = _embedded(server.embedding_requests[embeds:])
        # newlines as spaces, as the official OpenAI path sends a passage
        old_passages = [f"t{i} {d.text}" for i, d in enumerate(base.documents)]
        assert f"t-new {NEW}" in embedded and not set(embedded) & set(old_passages)
        assert "juniper" not in embedded  # a phrase of an old passage: from the store
        index_step = next(s for s in result.steps if s["node"] == "index")
        assert (
            index_step["embedded"]["passage"] == 1
            and index_step["embeddings_reused"]["passage"] == 8
        )

        edited = grown.update(
            Document(doc_id="7", text="Kale met Hazel near Fern in town ten.", title="t7")
        ).remove("6")
        chats, embeds = len(server.requests), len(server.embedding_requests)
        answers = [
            answer(edited, q, strategy="hipporag", llm=llm, cache_dir=shared, **OPTIONS)
            for q in QUESTIONS
        ]
        reused = next(s for s in answers[1].steps if s["node"] == "index")
        assert reused["source"] == "memory" and reused["embedded"] == {
            "passage": 0,
            "entity": 0,
            "fact": 0,
        }
        sent = [prompt_of(r) for r in server.requests[chats:]] + _embedded(
            server.embedding_requests[embeds:]
        )
        for word in ("Quokka", "Wombat", "Xerus", "Yarrow", "Zinnia"):
            assert not any(word.lower() in text.lower() for text in sent), word
        assert _openie_passages(server.requests[chats:]) == [
            "t7\nKale met Hazel near Fern in town ten."
        ]
        assert not any(
            w
            in json.dumps(_graph(edited, llm).kg.passages + _graph(edited, llm).kg.phrases).lower()
            for w in ("quokka", "zinnia")
        )

        held = {c.fingerprint: _graph(c, llm) for c in (grown, edited)}
        for corpus in (grown, edited):
            mine = held[corpus.fingerprint]
            build.forget_graphs()
            answer(
                corpus,
                QUESTIONS[2],
                strategy="hipporag",
                llm=llm,
                cache_dir=fresh / corpus.fingerprint[:8],
                **OPTIONS,
            )
            _same_graph(mine, _graph(corpus, llm))


def test_a_rescanned_folder_extracts_only_the_edited_file_and_forgets_the_deleted_one(
    tmp_path, monkeypatch
):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate([DOCS[0], DOCS[1], GONE, EDITED_OLD]):
        (folder / f"n{i}.txt").write_text(text, encoding="utf-8")
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        before = Corpus.from_path(folder)
        answer(
            before, QUESTIONS[0], strategy="hipporag", llm=llm, cache_dir=tmp_path / "c", **OPTIONS
        )
        (folder / "n2.txt").unlink()
        (folder / "n3.txt").write_text(DOCS[2], encoding="utf-8")
        after = before.rescan(folder)
        chats, embeds = len(server.requests), len(server.embedding_requests)
        result = answer(
            after,
            "Who met Quokka or Zinnia?",
            strategy="hipporag",
            llm=llm,
            cache_dir=tmp_path / "c",
            **OPTIONS,
        )
    asked = _openie_passages(server.requests[chats:])
    assert len(asked) == 1 and asked[0].endswith(DOCS[2]) and result.usage.index_llm_calls == 2
    sent = [r["messages"][-1]["content"] for r in server.requests[chats:]] + _embedded(
        server.embedding_requests[embeds:]
    )
    assert not [t for t in sent if "wombat" in t.lower() or "yarrow" in t.lower()]
    assert not [
        t for t in _embedded(server.embedding_requests[embeds:]) if t.endswith((DOCS[0], DOCS[1]))
    ]
    assert not [e for e in result.evidence if "Quokka" in e.text or "Yarrow" in e.text]
