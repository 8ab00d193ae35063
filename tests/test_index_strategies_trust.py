"""RAPTOR and HippoRAG against a hostile or broken server and a thin install, through the real
strategies at the recording stub: a stored OpenIE call altered on disk is named and asked again,
replies that ignore ``max_tokens`` are cut, unreadable replies mark the build ``degraded``, every
missing extra is named before the first request, and a budget counts the index calls still to make
(none when the tree or graph is cached)."""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys

import pytest

from longctx import Budget, BudgetExceeded, answer, estimate, make_chat_model
from longctx.graphs.hipporag import build as hipporag_build
from longctx.graphs.hipporag.build import forget_graphs, loaded
from longctx.graphs.raptor import graph as raptor_graph
from longctx.graphs.raptor.tree import leaves_of
from longctx.retrieval import Corpus
from longctx.retrieval.extras import MissingExtraError
from tests.recording_server import RecordingServer, prompt_of
from tests.test_hipporag import DOCS, QUESTION
from tests.test_hipporag import reply as hipporag_reply
from tests.test_raptor import corpus as raptor_corpus


def openie_reply(request: dict) -> str:
    """The fixed OpenIE replies of ``tests/test_hipporag`` (the filter and the answer too)."""
    return hipporag_reply(prompt_of(request))


def chat(server: RecordingServer):
    return make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)


def is_triple_call(request: dict) -> bool:
    return "RDF" in request["messages"][0]["content"]


@pytest.fixture(autouse=True)
def fresh_memory():
    forget_graphs()
    raptor_graph._TREES.clear()
    yield
    forget_graphs()
    raptor_graph._TREES.clear()


def index_step(result) -> dict:
    return next(s for s in result.steps if s["node"] == "index")


def test_a_flipped_byte_in_a_stored_triple_is_named_and_asked_again(tmp_path, caplog):
    corpus = Corpus.from_texts(DOCS)
    with RecordingServer(openie_reply) as server:
        answer(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path)
        (log,) = [
            p for p in (tmp_path / "hipporag" / "openie").rglob("*.jsonl") if "triples" in str(p)
        ]
        data = log.read_bytes()
        assert data.count(b'"Norway"') == 1
        log.write_bytes(data.replace(b'"Norway"', b'"Nprway"'))  # same size, still valid JSON
        shutil.rmtree(tmp_path / "hipporag" / "graphs")  # the graph is rebuilt from the log
        forget_graphs()
        before = sum(map(is_triple_call, server.requests))
        with caplog.at_level(logging.WARNING):
            again = answer(
                corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path
            )
        asked = sum(map(is_triple_call, server.requests)) - before
    assert "fails its xxh3_128 checksum" in caplog.text and str(log) in caplog.text
    assert (
        asked == 1 and index_step(again)["openie_calls_asked"] == 1
    )  # that passage's call, asked again
    kg = loaded(*held_graphs()).kg
    assert "nprway" not in kg.phrases and ("oslo", "capital of", "norway") in kg.facts


def held_graphs() -> list[str]:
    """The keys of the graphs this process holds (one per test: the fixture forgets them)."""
    return list(hipporag_build._LOADED.entries)


def test_replies_that_ignore_max_tokens_are_cut_with_a_warning_and_the_build_says_so(
    tmp_path, caplog
):
    # openie_max_tokens=64: a reply holds at most 64 * 16 = 1,024 characters and 64 // 4 =
    # 16 triples
    flood = json.dumps({"triples": [[f"alpha{i}", "links", f"beta{i}"] for i in range(20_000)]})
    thirty = json.dumps({"triples": [[f"a{i}", "r", f"b{i}"] for i in range(30)]})  # 601 characters

    def ignoring(request: dict) -> str:
        if not is_triple_call(request):
            return openie_reply(request)
        last = request["messages"][-1]["content"]
        return (
            flood
            if "Radio City" in last
            else thirty
            if "Bangalore is a" in last
            else openie_reply(request)
        )

    with RecordingServer(ignoring) as server, caplog.at_level(logging.WARNING):
        result = answer(
            Corpus.from_texts(DOCS),
            QUESTION,
            strategy="hipporag",
            llm=chat(server),
            cache_dir=tmp_path,
            openie_max_tokens=64,
        )
    assert all(r["max_tokens"] == 64 for r in server.requests if is_triple_call(r))
    kg = loaded(*held_graphs()).kg
    per_passage = [
        sum(1 for f in kg.facts if re.fullmatch(p, f[0])) for p in (r"alpha\d+", r"a\d+")
    ]
    assert (
        per_passage[0] <= 16 and per_passage[1] == 16
    )  # the flood cut at 1,024 characters, then at 16
    assert len(kg.facts) <= 16 + 16 + 1 and kg.phrases
    assert "ignored max_tokens" in caplog.text and "the first 16 kept" in caplog.text
    assert "2 OpenIE replies over their budget cut" in index_step(result)["degraded"]
    assert index_step(result)["openie_capped"] == 2


def test_unreadable_extraction_replies_mark_the_build_degraded_with_a_warning(tmp_path, caplog):
    def refusing(request: dict) -> str:
        system = request["messages"][0]["content"]
        openie = system.startswith("Your task is to extract named entities") or "RDF" in system
        return "I'm sorry, I can't help with that." if openie else openie_reply(request)

    corpus = Corpus.from_texts(DOCS)
    with RecordingServer(refusing) as server, caplog.at_level(logging.WARNING):
        first = answer(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path)
        forget_graphs()
        second = answer(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path)
    step = index_step(first)
    assert (step["phrases"], step["facts"], step["openie_unreadable"]) == (0, 0, 6)
    assert step["degraded"].startswith("6 of 6 OpenIE replies could not be read")
    assert "an empty graph" in step["degraded"] and "HippoRAG graph built degraded" in caplog.text
    assert (
        index_step(second)["source"] == "disk" and "built earlier" in index_step(second)["degraded"]
    )


@pytest.mark.parametrize(
    ("strategy", "absent", "install"),
    [
        ("hipporag", ("sentence_transformers", "igraph"), "longctx-lab[dense,hipporag]"),
        ("raptor", ("sentence_transformers", "umap"), "longctx-lab[dense,raptor]"),
    ],
)
def test_every_missing_extra_is_named_at_once_before_any_request(
    tmp_path, monkeypatch, strategy, absent, install
):
    for module in absent:  # not importable, as in a core install
        monkeypatch.setitem(sys.modules, module, None)
    with RecordingServer(openie_reply) as server:
        with pytest.raises(MissingExtraError) as caught:
            answer(
                raptor_corpus(), QUESTION, strategy=strategy, llm=chat(server), cache_dir=tmp_path
            )
    assert server.requests == [] and server.embedding_requests == []
    message = str(caught.value)
    assert f"pip install '{install}'" in message and all(repr(m) in message for m in absent)
    assert "\n" not in message


def test_a_budget_counts_the_graphs_openie_calls_until_it_is_cached(tmp_path):
    corpus = Corpus.from_texts(DOCS)
    with RecordingServer(openie_reply) as server:
        with pytest.raises(BudgetExceeded, match=r"7 calls > 3"):
            answer(
                corpus,
                QUESTION,
                strategy="hipporag",
                llm=chat(server),
                cache_dir=tmp_path,
                budget=Budget(max_llm_calls=3),
            )
        assert server.requests == []  # refused up front: no extraction call spent
        plan = estimate(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path)
        assert (plan.calls, plan.index.calls, plan.details["index_calls_left"]) == (7, 6, 6)
        answer(corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path)
        forget_graphs()  # the graph is on disk only
        assert (
            estimate(
                corpus, QUESTION, strategy="hipporag", llm=chat(server), cache_dir=tmp_path
            ).calls
            == 1
        )
        cached = answer(
            corpus,
            QUESTION,
            strategy="hipporag",
            llm=chat(server),
            cache_dir=tmp_path,
            budget=Budget(max_llm_calls=3),
        )
    assert cached.stopped is None and cached.usage.llm_calls == 2


def test_raptors_plan_counts_its_first_summary_and_bounds_its_calls_by_the_real_leaves(tmp_path):
    corpus = raptor_corpus(60)
    leaves = len(leaves_of(corpus, 100))
    with RecordingServer(openie_reply) as server:
        with pytest.raises(BudgetExceeded, match=r"2 calls > 1"):
            answer(
                corpus,
                QUESTION,
                strategy="raptor",
                llm=chat(server),
                cache_dir=tmp_path,
                budget=Budget(max_llm_calls=1),
            )
        plan = estimate(corpus, QUESTION, strategy="raptor", llm=chat(server), cache_dir=tmp_path)
    assert server.requests == []
    assert sum(corpus.token_counts) > 5 * leaves and plan.details["leaves"] == leaves == 60
    assert (
        plan.index.max_calls == 5 * leaves and plan.max_calls == 1 + 5 * leaves
    )  # num_layers x leaves, not x tokens
    assert (plan.calls, plan.index.calls) == (2, 1)
