"""RAPTOR end to end against the recording stub: the summary and answer requests the official code
sends, index-time usage on the answer that built the tree only, a build killed in the middle of a
layer resumed without asking a finished summary again, a corrupted tree file named and rebuilt,
and the leaves' sentence-aware split."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from longctx import answer_many, make_chat_model
from longctx.graphs.raptor import graph as raptor_graph
from longctx.graphs.raptor.prompts import (
    QA_SYSTEM,
    QA_TEMPLATE,
    SUMMARY_SYSTEM,
    SUMMARY_TEMPLATE,
    node_context,
)
from longctx.graphs.raptor.split import split_text
from longctx.retrieval import Corpus
from longctx.retrieval.tokens import count_tokens
from tests.recording_server import RecordingServer, prompt_of

TOPICS = ["ships", "bread", "rockets", "violins", "glaciers", "coffee"]
WORDS = (
    "harbour engine flour yeast orbit fuel string bow ice melt bean roast market river mountain "
    "signal copper forest lamp garden".split()
)
QUESTIONS = ["What did the team in city 2 measure?", "Which value was measured for coffee?"]


def corpus(n: int = 24) -> Corpus:
    """``n`` one-leaf documents of varied words (near-duplicates would collapse
    UMAP's neighbourhoods)."""
    rng = random.Random(3)
    docs = [
        f"Report {i} about {TOPICS[i % 6]}. "
        + " ".join(rng.choice(WORDS) for _ in range(60))
        + f". The team in city {i} measured value {i * 7}."
        for i in range(n)
    ]
    return Corpus.from_texts(docs, titles=[f"d{i}" for i in range(n)])


def reply(request: dict) -> str:
    text = prompt_of(request)
    return (
        "Summary of " + " ".join(text.split()[10:30]) if "Write a summary" in text else "value 14"
    )


def summaries(server: RecordingServer) -> list[dict]:
    return [r for r in server.requests if r["messages"][0]["content"] == SUMMARY_SYSTEM]


@pytest.fixture(autouse=True)
def fresh_memory():
    raptor_graph._TREES.clear()
    yield
    raptor_graph._TREES.clear()


@pytest.mark.slow  # ~40 s on 2 shared cores: UMAP's numba compilation and MiniLM
def test_requests_are_the_official_ones_and_index_usage_is_on_the_first_answer(tmp_path):
    with RecordingServer(reply, latency=0.02) as server:
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        first, second = answer_many(
            corpus(),
            QUESTIONS,
            strategy="raptor",
            preset="paper",
            llm=llm,
            cache_dir=tmp_path,
            concurrency=3,
        )
    assert (
        server.max_in_flight <= 3
    )  # the summaries of a layer: at most `concurrency` calls in flight
    tree = next(iter(raptor_graph._TREES.values()))
    layer1 = tree.layer(1)
    asked = summaries(server)
    assert len(asked) == len(layer1) > 1 and tree.num_layers == 1
    # one per cluster, with the children's text as get_text joins it
    expected = [
        [
            {"role": "system", "content": SUMMARY_SYSTEM},
            {
                "role": "user",
                "content": SUMMARY_TEMPLATE.format(
                    context=node_context([tree.nodes[c].text for c in node.children])
                ),
            },
        ]
        for node in layer1
    ]
    assert sorted(json.dumps(r["messages"], sort_keys=True) for r in asked) == sorted(
        json.dumps(m, sort_keys=True) for m in expected
    )
    assert all(r["max_tokens"] == 100 and "temperature" not in r for r in asked)
    qa = [r for r in server.requests if r["messages"][0]["content"] == QA_SYSTEM]
    assert len(qa) == 2
    for answer, question in ((first, QUESTIONS[0]), (second, QUESTIONS[1])):
        retrieved = [s for s in answer.steps if s["node"] == "retrieve"][0]["nodes"]
        assert len(retrieved) == 10  # collapsed tree, top_k=10 within 3,500 tokens
        context = node_context([tree.nodes[n["index"]].text for n in retrieved])
        sent = next(r for r in qa if r["messages"][1]["content"].endswith(question))
        assert sent["messages"][1] == {
            "role": "user",
            "content": QA_TEMPLATE.format(context=context, question=question),
        }
        assert sent["temperature"] == 0
    # the questions run side by side: whichever took the build lock first paid for the tree, the
    # other reused it
    builder, reuser = sorted((first, second), key=lambda a: -a.usage.index_llm_calls)
    assert (builder.usage.index_llm_calls, builder.usage.llm_calls) == (len(asked), len(asked) + 1)
    assert builder.usage.index_prompt_tokens == sum(len(prompt_of(r).split()) for r in asked)
    assert (
        reuser.usage.index_llm_calls,
        reuser.usage.index_prompt_tokens,
        reuser.usage.llm_calls,
    ) == (0, 0, 1)
    assert {s["node"]: s.get("source") for s in builder.steps}["build_tree"] == "built"
    assert {s["node"]: s.get("source") for s in reuser.steps}["build_tree"] in ("memory", "disk")


@pytest.mark.slow
def test_a_build_killed_mid_layer_resumes_without_asking_finished_summaries(tmp_path, monkeypatch):
    real = raptor_graph.summarizer
    calls = {"n": 0}

    def dying(ctx):
        ask = real(ctx)

        def summarize(context: str) -> str:
            calls["n"] += 1
            if calls["n"] == 4:
                raise RuntimeError("killed in the middle of layer 1")
            return ask(context)

        return summarize

    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        monkeypatch.setattr(raptor_graph, "summarizer", dying)
        with pytest.raises(RuntimeError, match="killed"):
            _answer(llm, tmp_path)
        finished = [
            prompt_of(r) for r in summaries(server)
        ]  # 3, or 4 when the one slot took the next summary before the build stopped
        assert 3 <= len(finished) <= 4
        monkeypatch.setattr(raptor_graph, "summarizer", real)
        raptor_graph._TREES.clear()
        (a,) = _answer(llm, tmp_path)
    again = [prompt_of(r) for r in summaries(server)][len(finished) :]
    build = next(s for s in a.steps if s["node"] == "build_tree")
    total = build["nodes_per_layer"][1]
    assert len(again) == total - len(finished) > 0 and not set(again) & set(
        finished
    )  # counted at the server: nothing asked twice
    assert a.usage.index_llm_calls == build["summaries_asked"] == total - len(finished)


def _answer(llm, cache):
    """One question, summaries asked one at a time."""
    return answer_many(
        corpus(), QUESTIONS[:1], strategy="raptor", llm=llm, cache_dir=cache, concurrency=1
    )


def test_leaves_are_sentence_aware_chunks_of_at_most_100_tokens():
    text = (
        "First sentence here. Second one! A third? "
        + "word, " * 150
        + "end. Last line\nafter a newline."
    )
    chunks = split_text(text, 100)
    assert chunks[0].startswith(" word") or chunks[0].startswith(
        "word"
    )  # the over-long sentence's clauses come first, as split_text
    assert (
        chunks[-1] == "First sentence here  Second one  A third  Last line after a newline"
    )  # the chunk being filled, delimiters dropped
    assert all(0 < count_tokens(c) <= 101 for c in chunks) and "" not in chunks
    assert split_text("", 100) == [] and split_text("One.", 100) == ["One"]


def test_a_small_corpus_stops_at_the_leaves_and_a_corrupted_tree_file_is_named_and_rebuilt(
    tmp_path, caplog
):
    small = corpus(
        11
    )  # at most reduction_dimension + 1 = 11 nodes: no layer is built, no summary asked
    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        (a,) = answer_many(small, QUESTIONS[:1], strategy="raptor", llm=llm, cache_dir=tmp_path)
        build = next(s for s in a.steps if s["node"] == "build_tree")
        assert (
            build["source"] == "built"
            and build["nodes_per_layer"] == [11]
            and "at most reduction_dimension + 1" in build["stopped"]
        )
        assert (a.usage.llm_calls, a.usage.index_llm_calls) == (1, 0) and not summaries(server)
        (tree_json,) = tmp_path.glob("raptor/*/tree.json")
        tree_json.write_text(
            tree_json.read_text().replace("Report", "Rxport", 1)
        )  # same size, other bytes
        raptor_graph._TREES.clear()
        (b,) = answer_many(small, QUESTIONS[:1], strategy="raptor", llm=llm, cache_dir=tmp_path)
    assert next(s for s in b.steps if s["node"] == "build_tree")["source"] == "built"
    assert "tree.json fails its xxh3_128 checksum" in caplog.text
    assert b.answer == a.answer and [e.doc_id for e in b.evidence] == [e.doc_id for e in a.evidence]


def test_report_shows_each_node_layer_and_cluster_and_the_ceiling_needs_the_index_llm():
    from longctx.graphs import STRATEGIES
    from longctx.graphs.plugin.ceiling import CeilingEnv, CeilingItem, SkipCeiling

    spec = STRATEGIES.get("raptor")
    step = {
        "node": "retrieve",
        "mode": "collapsed",
        "nodes": [
            {"index": 30, "layer": 1, "cluster": 4},
            {"index": 2, "layer": 0, "cluster": None},
        ],
    }
    shown = spec.presentation.step_views["retrieve"](step, {})
    assert "#30 (layer 1, cluster 4)" in str(shown.html) and "#2 (layer 0, leaf)" in str(shown.html)
    with pytest.raises(SkipCeiling, match="index-time LLM"):
        spec.ceiling.reach(
            spec.make_config(),
            CeilingItem(sample_id="s", corpus=corpus(2), question=None, evidence=("d0",)),
            CeilingEnv(),
        )


def _hand_tree():
    """Leaves 0-3, summaries 4 (of 0, 1) and 5 (of 2, 3), root 6 (of 4, 5), on unit vectors in
    3 dimensions."""
    import numpy as np

    from longctx.graphs.raptor.tree import Tree, TreeNode

    vec = {
        0: [1, 0, 0],
        1: [0.9, 0.1, 0],
        2: [0, 1, 0],
        3: [0, 0.9, 0.1],
        4: [1, 0.2, 0],
        5: [0.1, 1, 0],
        6: [0.5, 0.5, 0.1],
    }
    text = {i: f"node {i} " + "word " * (30 if i < 4 else 60) for i in vec}
    nodes = [TreeNode(i, 0, text[i], docs=(f"d{i}",), titles=(f"d{i}",)) for i in range(4)]
    nodes += [
        TreeNode(4, 1, text[4], (0, 1), cluster=0),
        TreeNode(5, 1, text[5], (2, 3), cluster=1),
        TreeNode(6, 2, text[6], (4, 5), cluster=0),
    ]
    m = np.array([vec[i] for i in range(7)], dtype=np.float32)
    return Tree(nodes, m / np.linalg.norm(m, axis=1, keepdims=True), 2, "test")


def test_collapsed_tree_ranks_every_layer_and_stops_at_the_first_node_over_the_budget():
    import numpy as np

    from longctx.graphs.raptor.retrieve import collapsed

    tree, query = _hand_tree(), np.array([1.0, 0.05, 0.0], dtype=np.float32)
    # cosine distances: leaves 0 and 1 (0.001, 0.002), their summary 4 (0.011), the root 6 (0.27),
    # then 5, 2, 3
    assert [n.index for n, _ in collapsed(tree, query, top_k=10, max_tokens=10_000)] == [
        0,
        1,
        4,
        6,
        5,
        2,
        3,
    ]
    assert [n.index for n, _ in collapsed(tree, query, top_k=3, max_tokens=10_000)] == [0, 1, 4]
    # leaves hold 34 tokens, summaries 64: 105 keeps 0 and 1 (68), stops at 4 (132); leaf 2 would
    # fit (102) but is never tried
    assert [n.index for n, _ in collapsed(tree, query, top_k=10, max_tokens=105)] == [0, 1]
    assert collapsed(tree, query, top_k=10, max_tokens=10) == []


def test_tree_traversal_descends_from_the_root_through_the_best_children():
    import numpy as np

    from longctx.graphs.raptor.retrieve import traversal

    tree, query = _hand_tree(), np.array([1.0, 0.05, 0.0], dtype=np.float32)
    assert [n.index for n, _ in traversal(tree, query, top_k=1)] == [
        6,
        4,
        0,
    ]  # num_layers + 1 layers, top 1 each
    assert [n.index for n, _ in traversal(tree, query, top_k=2)] == [
        6,
        4,
        5,
        0,
        1,
    ]  # the root's children, then the best two leaves of theirs


def test_leaves_equal_the_official_split_text():
    """``utils.split_text`` run unchanged on these texts (``python -m tests.raptor_official
    --split``) gave the fixture."""
    from tests.raptor_official import split_fixture_texts

    official = json.loads(
        (Path(__file__).parent / "fixtures" / "raptor" / "official_splits.json").read_text()
    )
    ours = [split_text(t, official["max_tokens"]) for t in split_fixture_texts()]
    assert (
        ours == [[c for c in chunks if c] for chunks in official["chunks"]]
        and sum(map(len, ours)) > 100
    )


def test_config_defaults_are_the_official_ones_and_bad_values_are_refused():
    from longctx.graphs import ConfigError
    from longctx.graphs.raptor.config import RaptorConfig

    c = RaptorConfig()
    tree = (
        c.chunk_tokens,
        c.reduction_dimension,
        c.cluster_threshold,
        c.max_cluster_tokens,
        c.num_layers,
        c.summary_tokens,
        c.seed,
    )
    assert tree == (100, 10, 0.1, 3500, 5, 100, 224)
    assert (c.retrieval, c.top_k, c.context_tokens, c.traversal_top_k, c.qa_prompt) == (
        "collapsed",
        10,
        3500,
        5,
        "ours",
    )
    for bad in (
        {"context_tokens": 50},
        {"cluster_threshold": 1.5},
        {"retrieval": "flat"},
        {"num_layers": 0},
    ):
        with pytest.raises(ConfigError):
            RaptorConfig(**bad)
