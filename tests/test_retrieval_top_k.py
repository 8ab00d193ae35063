"""Retrievers return ``min(top_k, chunks)`` chunks, as the official baselines do (issue 25, item 2).

LongBench v1's ``retrieval/pred.py`` takes ``get_top_n(...)[:top_k]`` from rank_bm25 (every
chunk ranked, whatever its score) and FlashRAG's retriever returns its top-5 whatever their
scores. BM25 here used to keep only chunks scoring above zero, so RAG
with ``top_k=7`` over 13 short documents sent one chunk and Self-Ask saw two contexts on a
hotpotqa item. Dropping zero-score chunks is now the ``drop_zero_scores`` option.
"""

from __future__ import annotations

import json

import pytest

from longctx import answer, make_chat_model
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs.plugin.config import ConfigError
from longctx.graphs.rag.config import RagConfig
from longctx.retrieval import Corpus, build_index
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted import ScriptedChatModel

TOPICS = [
    "The harbour authority repainted the lighthouse after the winter storms.",
    "Local farmers reported an early apple harvest in the valley.",
    "The city orchestra rehearsed a new symphony for the spring concerts.",
    "Engineers resurfaced the mountain road and added guard rails.",
    "The public library catalogued a donation of maritime charts.",
    "A cycling club organised a charity ride along the river.",
    "The museum vault code is 7421, known only to the director.",
    "Volunteers planted oak saplings in the northern park.",
    "The bakery on Mill Street introduced a rye loaf.",
    "Fishermen landed a record catch of mackerel in August.",
    "The school choir won the regional singing contest.",
    "A new ferry now links the two islands twice a day.",
    "The observatory opened its telescope to visitors on Fridays.",
]
QUESTION = "What is the museum vault code?"


def thirteen_documents() -> Corpus:
    return Corpus.from_texts(TOPICS, titles=[f"doc{i:02d}" for i in range(len(TOPICS))])


def test_rag_with_top_k_7_over_13_short_documents_returns_7_chunks():
    llm = ScriptedChatModel(reply_fn=lambda prompt: "7421")
    result = answer(thirteen_documents(), QUESTION, strategy="rag", llm=llm, top_k=7)
    assert len(result.evidence) == 7
    assert (
        result.evidence[0].title == "doc06"
    )  # the one chunk sharing words with the question first
    # the rest score 0 and follow in chunk order (ties by lower index)
    assert [e.title for e in result.evidence[1:]] == [
        "doc00",
        "doc01",
        "doc02",
        "doc03",
        "doc04",
        "doc05",
    ]
    assert all(TOPICS[int(e.title[3:])] in llm.calls[0]["prompt"] for e in result.evidence)
    assert result.config["drop_zero_scores"] is False


def test_drop_zero_scores_keeps_only_chunks_sharing_a_word():
    llm = ScriptedChatModel(reply_fn=lambda prompt: "7421")
    result = answer(
        thirteen_documents(), QUESTION, strategy="rag", llm=llm, top_k=7, drop_zero_scores=True
    )
    assert [e.title for e in result.evidence] == ["doc06"]
    assert result.config["drop_zero_scores"] is True


def test_drop_zero_scores_is_validated():
    with pytest.raises(ConfigError, match="drop_zero_scores"):
        RagConfig(drop_zero_scores="yes")


@pytest.mark.parametrize("k,expected", [(7, 7), (13, 13), (50, 13), (1, 1)])
@pytest.mark.parametrize("engine", ["bm25s", "rank_bm25"])
def test_bm25_returns_min_of_top_k_and_chunks(engine, k, expected):
    index = build_index(thirteen_documents(), "bm25", engine=engine)
    hits = index.search(QUESTION, k)
    assert len(hits) == expected and [h.rank for h in hits] == list(range(expected))
    assert hits[0].chunk.doc_id == index.chunks[6].doc_id


@pytest.mark.parametrize("k,expected", [(7, 7), (50, 13)])
def test_dense_retrievers_return_min_of_top_k_and_chunks(k, expected):
    with RecordingServer() as server:  # deterministic bag-of-words embeddings
        index = build_index(
            thirteen_documents(),
            "openai",
            model="rec",
            base_url=server.url,
            api_key="x",
            use_cache=False,
        )
        hits = index.search(QUESTION, k)
    assert len(hits) == expected and len({h.chunk.chunk_id for h in hits}) == expected


def hotpotqa_like(folder) -> None:
    """One LongBench hotpotqa record: ten ~180-word passages, two about the question's subject."""
    filler = " ".join(TOPICS[:12])
    passages = [f"Passage {i + 1}:\nTown {i}\n" + " ".join([filler] * 2) for i in range(10)]
    passages[3] = "Passage 4:\nAda Lovelace\nAda Lovelace was born in London in 1815. " + " ".join(
        [filler] * 2
    )
    passages[7] = (
        "Passage 8:\nByron\nLord Byron, the father of Ada Lovelace, died in Greece. "
        + " ".join([filler] * 2)
    )
    record = {
        "input": "Where was Ada Lovelace born?",
        "context": "\n".join(passages),
        "answers": ["London"],
        "length": 1900,
        "dataset": "hotpotqa",
        "language": "en",
        "all_classes": None,
        "_id": "hotpotqa-like",
    }
    folder.mkdir()
    (folder / "hotpotqa.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")


def test_a_hotpotqa_item_gets_7_chunks_for_rag_and_5_contexts_for_self_ask(tmp_path):
    hotpotqa_like(tmp_path / "longbench")

    def reply(request):
        return (
            "So the final answer is: London"
            if "Are follow up questions needed here" in prompt_of(request)
            else "London"
        )

    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("rag", "self_ask"),
            data_path=str(tmp_path / "longbench"),
            datasets=("hotpotqa",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    rows = {r["strategy"]: r for r in read_rows(tmp_path / "run")}
    rag_retrieve = next(s for s in rows["rag"]["steps"] if s["node"] == "retrieve")
    assert len(rag_retrieve["chunk_ids"]) == 7 and len(rows["rag"]["evidence"]) == 7
    self_ask_retrieve = next(s for s in rows["self_ask"]["steps"] if s["node"] == "retrieve")
    assert len(self_ask_retrieve["chunk_ids"]) == 5  # FlashRAG's top-5 contexts in the first prompt
    first_self_ask_prompt = next(
        prompt_of(r)
        for r in server.requests
        if "Are follow up questions needed here" in prompt_of(r)
    )
    assert (
        all(f"Context{i}: " in first_self_ask_prompt for i in range(1, 6))
        and "Context6: " not in first_self_ask_prompt
    )
