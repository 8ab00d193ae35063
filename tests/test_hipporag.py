"""HippoRAG 2 with scripted models: Personalized PageRank against a hand-computed graph, the graph
built from fixed OpenIE replies (phrase and passage nodes, counted fact edges, synonymy edges at the
threshold), a build killed in the middle of the OpenIE map resumed without asking a finished call
again, and answers through ``answer(corpus, q, strategy="hipporag")`` with index-time usage on the
answer that built the graph only."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from longctx import answer
from longctx.graphs.hipporag.build import forget_graphs
from longctx.graphs.hipporag.kg import KnowledgeGraph, build_graph, synonym_pairs
from longctx.graphs.hipporag.openie import Extraction
from longctx.graphs.hipporag.ppr import igraph_of, personalized_pagerank
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel

DOCS = [
    "Radio City is India's first private FM radio station. It was started in Bangalore in 2001.",
    "Bangalore is a city in India with many radio stations.",
    "Oslo is the capital of Norway.",
]
NER = {
    "Radio City is": '{"named_entities": ["Radio City", "India", "Bangalore"]}',
    "Bangalore is a": '{"named_entities": ["Bangalore", "India"]}',
    "Oslo is the": '{"named_entities": ["Oslo", "Norway"]}',
}
TRIPLES = {
    "Radio City is": (
        '{"triples": [["Radio City", "located in", "India"], ["Radio City", "started in", '
        '"Bangalore"]]}'
    ),
    "Bangalore is a": '{"triples": [["Bangalore", "is a city in", "India"]]}',
    "Oslo is the": '{"triples": [["Oslo", "capital of", "Norway"]]}',
}
KEPT = (
    '[[ ## fact_after_filter ## ]]\n{"fact": [["radio city", "started in", "bangalore"]]}\n\n'
    "[[ ## completed ## ]]"
)
QUESTION = "Where was Radio City started?"


def reply(prompt: str) -> str:
    """Fixed OpenIE JSON per passage (read from the request's last turn), the filter keeping one
    fact, a QA reply."""
    last = (
        prompt.rsplit("Paragraph:\n```\n", 1)[-1]
        if "RDF" in prompt
        else prompt.rsplit("\n}\n", 1)[-1]
    )
    table = TRIPLES if "RDF" in prompt else NER if "extract named entities" in prompt else None
    if table is not None:
        return next(v for k, v in table.items() if k in last)
    if "fact_before_filter" in prompt:
        return KEPT
    return "It started in Bangalore.\nAnswer: Bangalore"


@pytest.fixture(autouse=True)
def fresh_memory():
    forget_graphs()
    yield
    forget_graphs()


def _three_phrases(edges, weights) -> KnowledgeGraph:
    return KnowledgeGraph(
        ["a", "b", "c"], [], [], np.zeros((0, 0)), np.zeros((0, 0)), [[], [], []], edges, weights
    )


def test_personalized_pagerank_equals_the_hand_computed_one():
    # a - b - c, teleport to a, damping 1/2: pa = 1/2 + 1/2 (pb/2), pb = 1/2 (pa + pc), pc = 1/2
    # (pb/2) -> 7/12, 4/12, 1/12
    graph = igraph_of(_three_phrases([(0, 1), (1, 2)], [1.0, 1.0]))
    assert personalized_pagerank(graph, np.array([1.0, 0, 0]), 0.5) == pytest.approx(
        [7 / 12, 1 / 3, 1 / 12], abs=1e-9
    )
    # a = b twice (both directions recorded, as the official graph has a counted fact edge) and b -
    # c: b moves to a with 2/3; pa = 1/2 + 1/2 (2/3) pb, pb = 1/2 (pa + pc), pc = 1/2 (1/3) pb ->
    # 11/18, 6/18, 1/18; the reset is normalised, NaN and negatives zeroed
    graph = igraph_of(_three_phrases([(0, 1), (1, 0), (1, 2)], [1.0, 1.0, 1.0]))
    expected = [Fraction(11, 18), Fraction(1, 3), Fraction(1, 18)]
    assert personalized_pagerank(graph, np.array([3.0, np.nan, -2.0]), 0.5) == pytest.approx(
        [float(x) for x in expected], abs=1e-9
    )
    assert sum(expected) == 1


def test_graph_from_fixed_openie_replies_has_its_nodes_fact_edges_and_synonyms_at_the_threshold():
    from longctx.graphs.hipporag.build import asker
    from longctx.graphs.hipporag.config import HippoRAGConfig
    from longctx.graphs.hipporag.openie import OpenIELog, extract_all
    from longctx.graphs.plugin.context import StrategyContext

    llm = ScriptedChatModel(reply_fn=reply)
    ctx = StrategyContext(llm=llm, config=HippoRAGConfig(), corpus=Corpus.from_texts(DOCS))
    extractions, asked = extract_all(DOCS, asker(ctx), OpenIELog(None, "k", "m"), concurrency=2)
    assert asked == len(llm.calls) == 6 and extractions[2] == Extraction(
        ["Oslo", "Norway"], [["Oslo", "capital of", "Norway"]]
    )
    # fixed unit vectors: "radio city" ~ "bangalore" at exactly 0.8 (the threshold: kept), "india" ~
    # "norway" at 0.7999 (not kept)
    vectors = {
        "bangalore": [1, 0, 0, 0],
        "india": [0, 1, 0, 0],
        "norway": [0, 0.7999, (1 - 0.7999**2) ** 0.5, 0],
        "oslo": [0, 0, 1, 0],
        "radio city": [0.8, 0, 0, 0.6],
    }

    def embed(texts):
        return np.array(
            [vectors[t] if t in vectors else [0, 0, 0, 1] for t in texts], dtype=np.float32
        )

    kg = build_graph(DOCS, extractions, embed, threshold=0.8, top_k=2047)
    assert kg.phrases == [
        "bangalore",
        "india",
        "norway",
        "oslo",
        "radio city",
    ]  # sorted, normalised
    assert kg.facts == [
        ("radio city", "located in", "india"),
        ("radio city", "started in", "bangalore"),
        ("bangalore", "is a city in", "india"),
        ("oslo", "capital of", "norway"),
    ]
    assert kg.phrase_passages == [[0, 1], [0, 1], [2], [2], [0]]
    edges = dict(zip(kg.edges, kg.weights))
    assert (
        edges[(4, 1)] == edges[(1, 4)] == 1.0 and edges[(0, 1)] == edges[(1, 0)] == 1.0
    )  # subject-object, both directions, counted
    assert {e: w for e, w in edges.items() if e[0] >= 5} == {
        (5, 1): 1.0,
        (5, 4): 1.0,
        (5, 0): 1.0,
        (6, 0): 1.0,
        (6, 1): 1.0,
        (7, 2): 1.0,
        (7, 3): 1.0,
    }
    sims = {
        (a, b): w
        for a, b, w in synonym_pairs(kg.phrases, embed(kg.phrases), threshold=0.8, top_k=2047)
    }
    assert sims == {
        (0, 4): pytest.approx(0.8, abs=1e-6),
        (4, 0): pytest.approx(0.8, abs=1e-6),
    }  # at the threshold kept, below it not
    assert edges[(4, 0)] == pytest.approx(
        0.8, abs=1e-6
    )  # a synonym edge between phrases with a counted edge replaces its weight
    assert kg.facts_of_build["synonym_edges"] == len(sims) and kg.vertices == 8


def test_a_short_phrase_seeks_no_synonym_and_an_empty_one_is_none():
    vectors = np.array([[1.0, 0], [1.0, 0], [1.0, 0], [0, 1.0]], dtype=np.float32)
    pairs = synonym_pairs(["ab", "abc", "", "xyz"], vectors, threshold=0.8, top_k=10)
    assert pairs == [
        (1, 0, 1.0)
    ]  # "ab" (2 letters) asks none; "" is nobody's synonym; "xyz" is alone


def test_a_build_killed_in_the_openie_map_resumes_without_asking_a_finished_call(tmp_path):
    calls = {"n": 0}

    def dying(prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("killed in the middle of the OpenIE map")
        return reply(prompt)

    first = ScriptedChatModel(reply_fn=dying)
    with pytest.raises(RuntimeError, match="killed"):
        answer(
            Corpus.from_texts(DOCS),
            QUESTION,
            strategy="hipporag",
            llm=first,
            cache_dir=tmp_path,
            concurrency=1,
        )
    assert len(first.calls) == 4  # one passage at a time: the failed call was the last one asked
    finished = [c["prompt"] for c in first.calls[:3]]
    again = ScriptedChatModel(reply_fn=reply)
    result = answer(
        Corpus.from_texts(DOCS),
        QUESTION,
        strategy="hipporag",
        llm=again,
        cache_dir=tmp_path,
        concurrency=1,
    )
    index_prompts = [c["prompt"] for c in again.calls[:-2]]
    assert len(index_prompts) == 6 - 3 and not set(index_prompts) & set(
        finished
    )  # the three calls that finished are not asked again
    assert (
        result.usage.index_llm_calls == 3
        and next(s for s in result.steps if s["node"] == "index")["openie_calls_asked"] == 3
    )
    assert result.answer == "It started in Bangalore.\nAnswer: Bangalore"


def test_answers_through_answer_with_index_usage_on_the_first_only(tmp_path, caplog):
    corpus = Corpus.from_texts(DOCS, titles=["Radio City", "Bangalore", "Oslo"])
    llm = ScriptedChatModel(reply_fn=reply)
    first = answer(corpus, QUESTION, strategy="hipporag", llm=llm, cache_dir=tmp_path)
    assert (first.usage.llm_calls, first.usage.index_llm_calls) == (
        8,
        6,
    )  # NER + triples per passage; the filter; the answer
    assert first.usage.index_prompt_tokens == sum(
        len(c["prompt"].split()) for c in llm.calls[:6]
    )  # the scripted model counts words
    assert first.usage.prompt_tokens == sum(len(c["prompt"].split()) for c in llm.calls)
    steps = {s["node"]: s for s in first.steps}
    assert steps["index"]["source"] == "built" and (
        steps["index"]["phrases"],
        steps["index"]["passages"],
        steps["index"]["facts"],
    ) == (5, 3, 4)
    assert (
        steps["recognize"]["kept"] == [["radio city", "started in", "bangalore"]]
        and len(steps["recognize"]["candidates"]) == 4
    )
    assert steps["ppr"]["mode"] == "ppr" and [p for p, _ in steps["ppr"]["linked"]] == [
        "radio city",
        "bangalore",
    ]
    assert steps["ppr"]["top"][0]["doc_id"] == "0" and [e.doc_id for e in first.evidence][:2] == [
        "0",
        "1",
    ]
    assert llm.calls[-1]["prompt"].startswith(
        "Please read the following retrieved text chunks"
    )  # our RAG prompt by default
    forget_graphs()
    second = answer(
        corpus,
        "Which city is the capital of Norway?",
        strategy="hipporag",
        preset="paper",
        llm=llm,
        cache_dir=tmp_path,
    )
    assert (second.usage.llm_calls, second.usage.index_llm_calls) == (
        2,
        0,
    ) and second.answer == "Bangalore"  # read after "Answer:"
    assert {s["node"]: s.get("source") for s in second.steps}["index"] == "disk"
    assert (
        llm.calls[-1]["prompt"]
        .split("\n")[0]
        .startswith("As an advanced reading comprehension assistant")
    )
    assert (
        "Wikipedia Title: Radio City\nRadio City is India's" in llm.calls[-1]["prompt"]
    )  # title\ntext, as the official main.py builds passages
    (graph_json,) = tmp_path.glob("hipporag/graphs/*/graph.json")
    graph_json.write_text(
        graph_json.read_text().replace("radio city", "radio citx", 1)
    )  # same size, other bytes
    forget_graphs()
    third = answer(corpus, QUESTION, strategy="hipporag", llm=llm, cache_dir=tmp_path)
    assert (
        "graph.json fails its xxh3_128 checksum" in caplog.text
        and {s["node"]: s.get("source") for s in third.steps}["index"] == "built"
    )
    assert (third.usage.llm_calls, third.usage.index_llm_calls) == (
        2,
        0,
    )  # rebuilt from the OpenIE logs: no call asked again


def test_config_defaults_are_the_official_ones_and_bad_values_are_refused():
    from longctx.graphs import ConfigError
    from longctx.graphs.hipporag.config import HippoRAGConfig

    c = HippoRAGConfig()
    assert (
        c.synonymy_threshold,
        c.synonymy_top_k,
        c.linking_top_k,
        c.passage_node_weight,
        c.damping,
    ) == (0.8, 2047, 5, 0.05, 0.5)
    assert (
        c.retrieval_top_k,
        c.qa_top_k,
        c.max_new_tokens,
        c.openie_max_tokens,
        c.filter_max_tokens,
        c.temperature,
    ) == (200, 5, 2048, 2048, 512, 0.0)
    assert (c.passage_tokens, c.qa_prompt) == (None, "ours")
    for bad in (
        {"qa_top_k": 300},
        {"damping": 1.5},
        {"qa_prompt": "musique"},
        {"synonymy_top_k": 0},
    ):
        with pytest.raises(ConfigError):
            HippoRAGConfig(**bad)


def test_the_report_shows_filtered_triples_linked_phrases_top_passages_and_the_index_llm_ceiling():
    from longctx.graphs import STRATEGIES
    from longctx.graphs.plugin.ceiling import CeilingEnv, CeilingItem, SkipCeiling

    spec = STRATEGIES.get("hipporag")
    facts = spec.presentation.step_views["recognize"](
        {
            "node": "recognize",
            "candidates": [["a", "b", "c"], ["d", "e", "f"]],
            "kept": [["a", "b", "c"]],
        },
        {},
    )
    assert "kept 1 of 2 linked facts: (a | b | c)" in str(facts.html)
    step = {
        "node": "ppr",
        "mode": "ppr",
        "linked": [["radio city", 0.5]],
        "top": [{"passage": 3, "doc_id": "d3", "score": 0.25}],
    }
    shown = str(spec.presentation.step_views["ppr"](step, {}).html)
    assert "linked phrases: radio city (0.5)" in shown and "ppr top passages: #3 d3 (0.25)" in shown
    with pytest.raises(SkipCeiling, match="index-time LLM"):
        spec.ceiling.reach(
            spec.make_config(),
            CeilingItem(
                sample_id="s", corpus=Corpus.from_texts(DOCS), question=None, evidence=("0",)
            ),
            CeilingEnv(),
        )


def test_passages_are_documents_with_their_titles_or_pieces_of_passage_tokens():
    from longctx.graphs.hipporag.build import passages_of
    from longctx.graphs.hipporag.config import HippoRAGConfig

    corpus = Corpus.from_texts(
        [" ".join(["word"] * 250), DOCS[2], DOCS[2]],
        titles=["Long", "Oslo", "Oslo"],
        duplicates="keep",
    )
    texts, chunks = passages_of(corpus, HippoRAGConfig())
    assert texts == ["Long\n" + " ".join(["word"] * 250), "Oslo\n" + DOCS[2]] and [
        c.doc_id for c in chunks
    ] == ["0", "1"]  # equal passages: one node
    texts, chunks = passages_of(corpus, HippoRAGConfig(passage_tokens=100))
    assert (
        len(texts) == 4
        and all(t.startswith("Long\n") for t in texts[:3])
        and [c.position for c in chunks[:3]] == [0, 1, 2]
    )


def test_the_plan_gives_the_openie_pass_as_index_time_and_a_run_counts_what_it_planned(tmp_path):
    from longctx import estimate
    from longctx.agents.run_plan import estimate as run_plan
    from longctx.graphs import STRATEGIES

    corpus = Corpus.from_texts(DOCS)
    plan = estimate(corpus, QUESTION, strategy="hipporag", llm=ScriptedChatModel(reply_fn=reply))
    assert plan.index is not None and (plan.index.calls, plan.index.max_calls) == (
        6,
        6,
    )  # 2 per passage while the graph is not cached (none once it is: below)
    assert plan.question_calls == (1, 2)  # the answer; the filter besides when a fact is linked
    typical = run_plan(
        "hipporag", STRATEGIES.get("hipporag").make_config(), corpus.num_tokens, len(corpus), 4
    )
    assert typical.index_calls == 6 and typical.calls - typical.index_calls == 2 * 4
    llm = ScriptedChatModel(reply_fn=reply)
    result = answer(corpus, QUESTION, strategy="hipporag", llm=llm, cache_dir=tmp_path)
    assert (
        result.usage.index_llm_calls == plan.index.max_calls
        and result.usage.llm_calls - result.usage.index_llm_calls == plan.question_calls[1]
    )
    cached = estimate(corpus, QUESTION, strategy="hipporag", llm=llm, cache_dir=tmp_path)
    assert (cached.calls, cached.index.calls, cached.question_calls) == (1, 0, (1, 2))
