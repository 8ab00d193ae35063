"""HippoRAG's requests and reply parsing against the official code's own
(``tests/hipporag_official.py`` ran OSU-NLP-Group/HippoRAG @ c617143 unchanged against a recording
stand-in and wrote the fixture): the NER, triple-extraction, recognition-filter and QA message
lists, the filter's budget, and what each official parser reads from the same replies; then the
OpenIE requests our strategy sends, at the recording stub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.openie import parse_entities, parse_triples
from longctx.graphs.hipporag.requests import (
    filter_messages,
    ner_messages,
    qa_answer,
    qa_messages,
    triple_messages,
)
from longctx.graphs.hipporag.retrieve import kept_facts, parse_filter
from tests import hipporag_official as official

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "hipporag" / "official_requests.json").read_text(
        encoding="utf-8"
    )
)


def test_openie_messages_equal_the_official_ones():
    assert [x["passage"] for x in FIXTURE["openie"]] == official.PASSAGES
    for x in FIXTURE["openie"]:
        assert ner_messages(x["passage"]) == x["ner"]["messages"]
        assert (
            triple_messages(x["passage"], x["entities"]) == x["triples"]["messages"]
        )  # entities sent as json.dumps sends them (non-ASCII escaped)
        assert (
            x["ner"]["kwargs"] == x["triples"]["kwargs"] == {}
        )  # the model's generate_params: max_new_tokens 2048, temperature 0


def test_filter_and_qa_messages_equal_the_official_ones():
    for x in FIXTURE["filter"]:
        assert filter_messages(official.QUESTION, official.CANDIDATES) == x["call"]["messages"]
        assert (
            x["call"]["kwargs"]["max_completion_tokens"]
            == HippoRAGConfig().filter_max_tokens
            == 512
        )
    for x in FIXTURE["qa"]:
        assert (
            qa_messages(official.QA_DOCS, official.QUESTION) == x["call"]["messages"]
        )  # "$$94" sent as "$94", as string.Template renders it


@pytest.mark.parametrize("case", range(len(official.NER_REPLIES)))
def test_ner_replies_parse_as_the_official_parser_reads_them(case):
    x = FIXTURE["ner_parses"][case]
    assert parse_entities(x["reply"], x["finish_reason"] == "length") == x["entities"]


@pytest.mark.parametrize("case", range(len(official.TRIPLE_REPLIES)))
def test_triple_replies_parse_as_the_official_parser_reads_them(case):
    x = FIXTURE["triple_parses"][case]
    assert parse_triples(x["reply"], x["finish_reason"] == "length") == x["triples"]


def test_filter_replies_keep_the_facts_the_official_filter_keeps():
    assert len(FIXTURE["filter"]) == len(official.FILTER_REPLIES)
    for x in FIXTURE["filter"]:
        kept = kept_facts(parse_filter(x["reply"]), list(official.CANDIDATES), 5)
        assert [10 + k for k in kept] == x["indices"] and [
            list(official.CANDIDATES[k]) for k in kept
        ] == x["kept"]


def test_qa_answers_are_read_as_the_official_code_reads_them():
    assert (
        [qa_answer(x["reply"]) for x in FIXTURE["qa"]]
        == [x["answer"] for x in FIXTURE["qa"]]
        == ["3 July 2001", "No answer marker here"]
    )


def test_the_strategy_sends_the_official_openie_requests(tmp_path):
    """Through a real OpenAI client: each passage's NER request, then its triple request given the
    entities the NER reply names."""
    from longctx import answer, make_chat_model
    from longctx.graphs.hipporag.build import forget_graphs
    from longctx.retrieval import Corpus
    from tests.recording_server import RecordingServer

    ner_reply = '{"named_entities": ["Radio City", "India", "Café Zürich", "José"]}'

    def reply(request: dict) -> str:
        system = request["messages"][0]["content"]
        return (
            ner_reply
            if system.startswith("Your task is to extract named entities")
            else '{"triples": []}'
            if "RDF" in system
            else "2001"
        )

    titles, texts = zip(
        *(p.split("\n", 1) if "\n" in p else ("", p) for p in official.PASSAGES)
    )  # no title: the text alone
    forget_graphs()
    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        result = answer(
            Corpus.from_texts(list(texts), titles=list(titles)),
            official.QUESTION,
            strategy="hipporag",
            llm=llm,
            cache_dir=tmp_path,
            concurrency=1,
        )
    by_passage = {x["passage"]: x for x in FIXTURE["openie"]}
    openie = server.requests[:-1]
    assert len(openie) == 2 * len(official.PASSAGES) and result.usage.index_llm_calls == len(openie)
    for ner, triples in zip(openie[::2], openie[1::2]):
        x = by_passage[ner["messages"][-1]["content"]]
        assert (
            ner["messages"] == x["ner"]["messages"]
            and triples["messages"] == x["triples"]["messages"]
        )
        assert all(r["max_tokens"] == 2048 and r["temperature"] == 0 for r in (ner, triples))
    assert {s["node"]: s.get("mode") for s in result.steps}[
        "ppr"
    ] == "dense"  # no triple, no fact: the dense ranking, no filter call
    assert result.usage.llm_calls == len(openie) + 1


def test_openie_calls_stay_within_concurrency(tmp_path):
    from longctx import answer, make_chat_model
    from longctx.graphs.hipporag.build import forget_graphs
    from longctx.retrieval import Corpus
    from tests.recording_server import RecordingServer

    forget_graphs()
    with RecordingServer(lambda request: '{"named_entities": []}', latency=0.05) as server:
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        corpus = Corpus.from_texts([f"Passage {i} about topic {i}." for i in range(6)])
        result = answer(
            corpus,
            official.QUESTION,
            strategy="hipporag",
            llm=llm,
            cache_dir=tmp_path,
            concurrency=2,
        )
    assert server.max_in_flight <= 2 and result.usage.index_llm_calls == 12


def tie_groups(docs: list[str], scores: list[float]) -> list[set[str]]:
    """``docs`` (best first) as runs of equal scores: a ranking up to the order of its ties."""
    groups: list[set[str]] = []
    for i, doc in enumerate(docs):
        if i and abs(scores[i] - scores[i - 1]) <= 1e-12:
            groups[-1].add(doc)
        else:
            groups.append({doc})
    return groups


def argsort_ties_reversed(a, axis=-1, kind=None, order=None):
    """``np.argsort`` of a vector with its ties last index first: an order another CPU's vectorised
    sort may leave them in (numpy's default sort is not stable)."""
    import numpy as np

    a = np.asarray(a)
    return np.lexsort((-np.arange(len(a)), a))


@pytest.mark.parametrize("ties", ["this machine's", "reversed"])
def test_graph_and_ppr_rankings_equal_the_official_ones(ties, monkeypatch):
    """``python -m tests.hipporag_official --graph`` ran the official ``HippoRAG.index`` and
    ``retrieve`` on six passages with scripted OpenIE and filter replies and word-hash embeddings;
    ours, on the same replies and vectors, builds the same weighted edges (synonyms included) and
    ranks every passage the same for five questions, with the same scores. Passages of equal score
    come in the order ``np.argsort`` leaves them, as in the official code, which differs between
    machines: the rankings are compared up to the order of their ties."""
    import numpy as np

    from longctx.graphs.hipporag.kg import build_graph
    from longctx.graphs.hipporag.openie import OpenIELog, extract_all
    from longctx.graphs.hipporag.ppr import igraph_of
    from longctx.graphs.hipporag.retrieve import (
        candidate_facts,
        fact_scores,
        kept_facts,
        parse_filter,
        rank_passages,
    )

    oracle = json.loads(
        (Path(__file__).parent / "fixtures" / "hipporag" / "official_graph.json").read_text(
            encoding="utf-8"
        )
    )
    texts = list(official.GRAPH_PASSAGES)
    extractions, _ = extract_all(
        texts,
        lambda messages: (official.graph_replies(messages), False),
        OpenIELog(None, "k", "m"),
        2,
    )
    kg = build_graph(texts, extractions, official.word_vectors, threshold=0.8, top_k=2047)
    name = kg.phrases + kg.passages
    ours = sorted(
        [*sorted((name[a], name[b])), w] for (a, b), w in zip(kg.edges, kg.weights)
    )  # undirected: each edge's ends in order
    theirs = sorted([*sorted(e[:2]), e[2]] for e in oracle["edges"])
    assert [e[:2] for e in ours] == [e[:2] for e in theirs] and kg.facts_of_build[
        "synonym_edges"
    ] > 0
    assert [e[2] for e in ours] == pytest.approx([e[2] for e in theirs], abs=1e-6)
    graph = igraph_of(kg)
    if ties == "reversed":
        monkeypatch.setattr(np, "argsort", argsort_ties_reversed)
    for expected in oracle["retrieved"]:
        query = official.word_vectors([expected["question"]])[0]
        scores = fact_scores(kg, query)
        picked = candidate_facts(scores, 5)
        candidates = [kg.facts[i] for i in picked]
        kept = kept_facts(
            parse_filter(official.graph_replies(filter_messages(expected["question"], candidates))),
            candidates,
            5,
        )
        r = rank_passages(
            kg,
            graph,
            query,
            [candidates[k] for k in kept],
            [float(scores[picked[k]]) for k in kept],
            link_top_k=5,
            passage_node_weight=0.05,
            damping=0.5,
        )
        ranked = [kg.passages[j] for j in r.order]
        assert tie_groups(ranked, list(r.scores)) == tie_groups(
            expected["docs"], expected["scores"]
        ), expected["question"]
        assert np.asarray(r.scores) == pytest.approx(expected["scores"], abs=1e-9)
