"""A streamed RAPTOR or HippoRAG answer reports its index build as it goes: progress events
(``summarize``: RAPTOR's cluster summaries, ``openie``: HippoRAG's passages, ``embed``: the texts
embedded) arrive before the answer's first step, not only after the build (the first event came
after 23.9 s of a 24.0 s answer)."""

from __future__ import annotations

import random

import pytest

from longctx import AnswerEvent, ProgressEvent, StepEvent, make_chat_model, stream_answer
from longctx.graphs.hipporag.build import forget_graphs
from longctx.graphs.raptor import graph as raptor_graph
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer, prompt_of


def _progress_before_the_first_step(events: list) -> dict[str, list[tuple[int, int | None]]]:
    """Each stage's ``(done, total)`` in order, all of them before the first step (asserted)."""
    first_step = next(i for i, e in enumerate(events) if isinstance(e, StepEvent))
    assert isinstance(events[-1], AnswerEvent) and events[first_step].step["node"] in (
        "build_tree",
        "index",
    )
    stages: dict[str, list[tuple[int, int | None]]] = {}
    for i, e in enumerate(events):
        if isinstance(e, ProgressEvent):
            assert i < first_step, f"{e} after the build's step"
            stages.setdefault(e.stage, []).append((e.done, e.total))
    return stages


def test_hipporag_reports_each_passages_openie_and_the_embedding_before_its_first_step(
    tmp_path, monkeypatch
):
    passages = [f"Passage {i} says that city {i} lies on river {i}." for i in range(5)]

    def reply(request: dict) -> str:
        system = request["messages"][0]["content"]
        if system.startswith("Your task is to extract named entities"):
            return '{"named_entities": ["city", "river"]}'
        if "RDF" in system:
            return '{"triples": [["city", "lies on", "river"]]}'
        return "river 3"

    forget_graphs()
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        events = list(
            stream_answer(
                Corpus.from_texts(passages),
                "Where is city 3?",
                strategy="hipporag",
                llm=llm,
                cache_dir=tmp_path,
                concurrency=1,
                embedder="openai",
            )
        )
    stages = _progress_before_the_first_step(events)
    assert stages["openie"] == [(k, 5) for k in range(6)]  # 0 of 5, then one per passage
    embedded = stages["embed"]
    assert embedded[-1][0] == embedded[-1][1] > 0 and embedded == sorted(embedded)
    assert events[-1].answer.usage.index_llm_calls == 10


WORDS = "harbour engine flour yeast orbit fuel string bow ice melt bean roast market river".split()


@pytest.mark.slow  # UMAP's numba compilation
def test_raptor_reports_each_layers_summaries_and_the_embedding_before_its_first_step(
    tmp_path, monkeypatch
):
    rng = random.Random(3)
    docs = [f"Report {i}. " + " ".join(rng.choice(WORDS) for _ in range(60)) for i in range(24)]

    def reply(request: dict) -> str:
        text = prompt_of(request)
        return "Summary of " + " ".join(text.split()[10:30]) if "Write a summary" in text else "x"

    raptor_graph._TREES.clear()
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
        events = list(
            stream_answer(
                Corpus.from_texts(docs),
                "What did report 2 say?",
                strategy="raptor",
                llm=llm,
                cache_dir=tmp_path,
                concurrency=1,
                embedder="openai",
            )
        )
    raptor_graph._TREES.clear()
    stages = _progress_before_the_first_step(events)
    asked = events[-1].answer.usage.index_llm_calls
    assert asked > 1 and stages["summarize"][-1] == (asked, asked)
    assert [done for done, _ in stages["summarize"]] == sorted(
        done for done, _ in stages["summarize"]
    )
    assert stages["embed"][0] == (0, 24) and stages["embed"][-1] == (24 + asked, 24 + asked)
