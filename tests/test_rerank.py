"""Reranking as a second stage (issue 39, item 2): a server speaking the common rerank API (requests
recorded and checked; errors and timeouts retried, then failing the answer clearly with nothing
lost) and a sentence-transformers CrossEncoder from a local path (a tiny BERT built in the test)."""

from __future__ import annotations

import json

import pytest

from longctx import answer, make_chat_model
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs.plugin.config import ConfigError
from longctx.retrieval import Corpus, build_index
from longctx.retrieval.contract import as_question
from longctx.retrieval.rerank import RerankError
from tests.recording_server import RecordingServer, prompt_of
from tests.rerank_server import RerankServer, token_count, word_overlap
from tests.scripted import ScriptedChatModel

DOCS = [
    (
        "The harbour lighthouse keeper logged every ship entering the harbour during the storm "
        "season, storm after storm, noting cargo, flags, crews, tonnage, weather, tides and "
        "arrival times in a leather ledger kept by the harbour lighthouse stairs."
    ),
    "Ships entering the harbour pay a fee.",
    "The lighthouse was repainted red and white in spring.",
    "A storm damaged the lighthouse lamp in the harbour; the keeper repaired it.",
    "The bakery sells rye bread.",
    "Volunteers planted oak saplings in the park.",
]
QUESTION = "Who repaired the harbour lighthouse lamp after the storm?"


def corpus() -> Corpus:
    return Corpus.from_texts(DOCS, titles=[f"doc{i}" for i in range(len(DOCS))])


def server_options(server: RerankServer, **extra) -> dict:
    return {"base_url": server.url, "model": "bge-reranker-v2-m3", "backoff": 0.0, **extra}


def test_rerank_requests_carry_query_candidates_and_top_n_and_keep_the_servers_best():
    query = as_question(QUESTION).render()
    first_stage = build_index(corpus(), "bm25").search(query, 4)
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    with RerankServer() as server:
        result = answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=llm,
            top_k=2,
            rerank="server",
            rerank_options=server_options(server),
            rerank_candidates=4,
        )
    assert server.paths == ["/v1/rerank"] and len(server.requests) == 1
    sent = server.requests[0]
    assert sent["query"] == query and sent["top_n"] == 2 and sent["model"] == "bge-reranker-v2-m3"
    assert sent["documents"] == [
        h.chunk.text for h in first_stage
    ]  # BM25's top rerank_candidates, in its order
    best = sorted(first_stage, key=lambda h: (-word_overlap(query, h.chunk.text), h.rank))[:2]
    assert [e.chunk_id for e in result.evidence] == [h.chunk.chunk_id for h in best]
    assert [e.chunk_id for e in result.evidence] != [
        h.chunk.chunk_id for h in first_stage[:2]
    ]  # the reranker changed the pick
    for rank, (e, h) in enumerate(zip(result.evidence, best)):
        assert e.rank == rank and e.score == pytest.approx(word_overlap(query, h.chunk.text))
        assert e.components == {
            "bm25": {"rank": h.rank, "score": h.score},
            "rerank": {"rank": rank, "score": e.score},
        }
    assert all(e.text in llm.calls[0]["prompt"] for e in result.evidence)
    assert (result.usage.rerank_calls, result.usage.rerank_failed_calls) == (1, 0)
    assert result.usage.rerank_tokens == sum(token_count(query, d) for d in sent["documents"])
    assert result.config["rerank"] == "server" and result.config["rerank_candidates"] == 4


def test_a_server_error_is_retried_and_counted():
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    with RerankServer(fail=2, fail_status=503) as server:
        result = answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=llm,
            top_k=2,
            rerank="server",
            rerank_options=server_options(server),
        )
    assert (
        len(server.requests) == 3 and server.requests[0] == server.requests[2]
    )  # the same request, resent
    assert (result.usage.rerank_calls, result.usage.rerank_failed_calls) == (1, 2)
    assert len(result.evidence) == 2


@pytest.mark.parametrize("failure", ["status", "timeout"])
def test_a_server_that_keeps_failing_fails_the_answer_clearly_after_its_retries(failure):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    server = (
        RerankServer(fail=-1, fail_status=500) if failure == "status" else RerankServer(hang=True)
    )
    with server, pytest.raises(RerankError) as caught:
        answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=llm,
            rerank="server",
            rerank_options=server_options(server, max_retries=2, timeout=0.3),
        )
    assert len(server.requests) == 3  # the first attempt and 2 retries
    message = str(caught.value)
    assert f"rerank server at {server.url}/rerank failed after 2 retries" in message
    assert ("HTTP 500" in message) if failure == "status" else ("ReadTimeout" in message)
    assert llm.calls == []  # no answer was made from unreranked chunks


def test_a_client_error_is_not_retried():
    with (
        RerankServer(fail=-1, fail_status=400) as server,
        pytest.raises(RerankError, match=r"rejected the request \(HTTP 400\)"),
    ):
        answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=ScriptedChatModel(reply_fn=lambda p: "x"),
            rerank="server",
            rerank_options=server_options(server),
        )
    assert len(server.requests) == 1


def test_a_failed_rerank_fails_its_row_only_and_the_next_run_answers_it(tmp_path):
    data = tmp_path / "longbench"
    data.mkdir()
    records = [
        {
            "input": q,
            "context": "\n".join(DOCS),
            "answers": ["the keeper"],
            "length": 80,
            "dataset": "hotpotqa",
            "language": "en",
            "all_classes": None,
            "_id": f"q{i}",
        }
        for i, q in enumerate([QUESTION, "What does the bakery sell?"])
    ]
    (data / "hotpotqa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    with RecordingServer(lambda request: "the keeper") as chat, RerankServer(fail=-1) as reranker:
        llm = make_chat_model("openai:rec", base_url=chat.url, max_retries=0)
        options = {
            "rag": {
                "rerank": "server",
                "rerank_options": server_options(reranker, max_retries=1),
                "top_k": 2,
            }
        }
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("rag",),
            data_path=str(data),
            datasets=("hotpotqa",),
            llm_cache=False,
            strategy_options=options,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
        failed = read_rows(tmp_path / "run")
        assert [r["status"] for r in failed] == ["failed", "failed"]
        assert all(
            f"rerank server at {reranker.url}/rerank failed after 1 retries" in r["error"]
            for r in failed
        )
        assert chat.requests == []  # no model call spent on an answer that could not be made
        reranker.fail = 0  # the server is back
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    rows = read_rows(tmp_path / "run")
    assert sorted((r["sample_id"], r["status"]) for r in rows if r["status"] == "ok") == sorted(
        (r["sample_id"], "ok") for r in failed
    )
    assert all(r["usage"]["rerank_calls"] == 1 for r in rows if r["status"] == "ok")
    assert len(chat.requests) == 2 and all(r["evidence"] for r in rows if r["status"] == "ok")
    prompts = "\n".join(prompt_of(request) for request in chat.requests)
    assert all(
        e["snippet"] in prompts and set(e["components"]) == {"bm25", "rerank"}
        for r in rows
        if r["status"] == "ok"
        for e in r["evidence"]
    )


def test_an_unknown_reranker_is_refused_before_any_work():
    with pytest.raises(ConfigError, match="rerank"):
        answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=ScriptedChatModel(reply_fn=lambda p: "x"),
            rerank="colbert",
        )


def tiny_cross_encoder(folder) -> str:
    """A 2-layer BERT sequence classifier (one label, random weights, seed 0) with a word-piece
    vocabulary of the test's words, saved as a local checkpoint: no download."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from tests.rerank_server import words

    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *sorted(set().union(*(words(t) for t in [*DOCS, QUESTION]))),
    ]
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(
        folder
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    return str(folder)


def test_a_local_cross_encoder_reranks_by_its_own_scores(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = tiny_cross_encoder(tmp_path / "tiny-reranker")
    query = as_question(QUESTION).render()
    first_stage = build_index(corpus(), "bm25").search(query, 5)
    tokenizer, model = (
        AutoTokenizer.from_pretrained(path),
        AutoModelForSequenceClassification.from_pretrained(path).eval(),
    )
    # the model's relevance of each (query, chunk) pair, computed here without sentence-transformers
    with torch.no_grad():
        batch = tokenizer(
            [query] * 5,
            [h.chunk.text for h in first_stage],
            padding=True,
            truncation=True,
            return_tensors="pt",
        )
        relevance = torch.sigmoid(model(**batch).logits[:, 0]).tolist()
    expected = sorted(zip(first_stage, relevance), key=lambda pair: (-pair[1], pair[0].rank))[:3]
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    result = answer(
        corpus(),
        QUESTION,
        strategy="rag",
        llm=llm,
        top_k=3,
        rerank="cross-encoder",
        rerank_options={"model": path},
        rerank_candidates=5,
    )
    assert [e.chunk_id for e in result.evidence] == [h.chunk.chunk_id for h, _ in expected]
    assert [e.score for e in result.evidence] == pytest.approx(
        [score for _, score in expected], abs=1e-5
    )
    assert [e.components["bm25"]["rank"] for e in result.evidence] == [h.rank for h, _ in expected]
    assert result.usage.rerank_calls == 1 and result.usage.rerank_tokens == int(
        batch["attention_mask"].sum()
    )


def test_pais_prefilter_reranks_each_sub_questions_candidates():
    from tests.test_pai import PROPERTIES, calls_of, model, run

    llm = model()
    with RerankServer() as server:
        result = run(
            llm,
            judge_mode="prefilter",
            top_k=2,
            rerank="server",
            rerank_options=server_options(server),
            rerank_candidates=3,
        )
    assert len(server.requests) == len(PROPERTIES) == result.usage.rerank_calls
    assert [r["query"] for r in server.requests] == next(
        s for s in result.steps if "sub_questions" in s
    )["sub_questions"]
    assert all(r["top_n"] == 2 and len(r["documents"]) == 3 for r in server.requests)
    assert (
        len(calls_of(llm, "Query: ")) == len(PROPERTIES) * 2
    )  # the judge sees the reranked top_k only


def test_a_hosted_rerankers_tokens_are_priced_like_a_chat_models():
    from longctx.experiments.planning.prices import Price, row_cost

    chat = Price(1.0, 2.0, source="user", key="m")

    def row(kind: str, base_url: str = "https://rerank.example.com/v1") -> dict:
        return {
            "status": "ok",
            "usage": {"prompt_tokens": 1_000, "completion_tokens": 500, "rerank_tokens": 2_000_000},
            "config": {
                "rerank": kind,
                "rerank_options": {"model": "rerank-v3.5", "base_url": base_url},
            },
        }

    assert row_cost(row("server"), chat, {"rerank-v3.5": (0.05, 0.0)}) == pytest.approx(0.002 + 0.1)
    assert (
        row_cost(row("server"), chat, {}) is None
    )  # an unpriced hosted reranker: cost unknown, as an unpriced chat model
    assert row_cost(row("server", "http://127.0.0.1:8012/v1"), chat) == pytest.approx(
        0.002
    )  # a local server is free
    assert row_cost(row("cross-encoder"), chat) == pytest.approx(0.002)  # in-process: free
    assert row_cost({**row("server"), "config": {}}, chat) == pytest.approx(0.002)  # no reranker
