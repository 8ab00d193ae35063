"""Malformed rerank replies (issue 46, item 6): every one a ``RerankError`` naming the server
after its retries, and no answer call made from a context the reply would have shrunk."""

from __future__ import annotations

import json
import math

import pytest

from longctx import answer
from longctx.experiments.cli.app import main
from longctx.retrieval.rerank import RerankError, order_by_score
from tests.recording_server import RecordingServer
from tests.rerank_server import RerankServer
from tests.scripted import ScriptedChatModel
from tests.test_rerank import DOCS, QUESTION, corpus, server_options


def results(*items: tuple[object, object]) -> bytes:
    """A reply ranking ``(index, score)`` pairs, as the server would write them."""
    ranked = [{"index": i, "relevance_score": s} for i, s in items]
    return json.dumps({"results": ranked, "usage": {"total_tokens": 10}}).encode()


MALFORMED = {
    "a list": (b"[]", "the reply is a list"),
    "a string": (b'"ok"', "the reply is a string"),
    "null": (b"null", "the reply is null"),
    "infinite tokens": (
        b'{"results": [{"index": 0, "relevance_score": 1}, {"index": 1, "relevance_score": 0.5}],'
        b' "usage": {"total_tokens": Infinity}}',
        "Infinity, which is not JSON",
    ),
    "infinite index": (
        b'{"results": [{"index": Infinity, "relevance_score": 1}]}',
        "Infinity, which is not JSON",
    ),
    "NaN score": (
        (
            b'{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": '
            b"0.5}]}"
        ),
        "NaN, which is not JSON",
    ),
    "100,000-deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "duplicate index": (results((0, 0.9), (0, 0.8)), "document 0 is ranked twice"),
    "fractional index": (results((0, 0.9), (1.5, 0.8)), "index '1.5' is not an integer"),
    "missing index": (results((0, 0.9)), "1 of the 2 documents asked are ranked"),
    "no results": (results(), "0 of the 2 documents asked are ranked"),
    "string score": (results((0, "high"), (1, 0.5)), "score 'high' is not a number"),
    "index past the documents": (results((0, 0.9), (9, 0.5)), "result index 9 outside"),
}


@pytest.fixture(scope="module")
def one_server():
    """One server for every malformed reply (a server's shutdown waits out its 0.5 s poll)."""
    with RerankServer() as server:
        yield server


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_is_retried_then_fails_the_answer_before_any_model_call(case, one_server):
    raw, why = MALFORMED[case]
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    server, server.raw, server.requests = one_server, raw, []
    with pytest.raises(RerankError) as caught:
        answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=llm,
            top_k=2,
            rerank="server",
            rerank_options=server_options(server, max_retries=1),
        )
    message = str(caught.value)
    assert len(server.requests) == 2  # the first attempt and its retry
    assert message.startswith(f"The rerank server at {server.url}/rerank failed after 1 retries")
    assert "malformed reply" in message and why in message and "\n" not in message
    assert caught.value.status == 200
    assert llm.calls == []  # no answer made from a shrunken context


def test_more_results_than_asked_keep_the_best_top_n():
    """A server that ignores ``top_n`` and ranks every document is fine: its best ``top_n``
    are kept."""
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    every = results(*((i, i / 10) for i in range(4)))  # four candidates, the last best
    with RerankServer(raw=every) as server:
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
    assert [e.score for e in result.evidence] == [0.3, 0.2] and len(llm.calls) == 1


def test_a_nan_score_ranks_last_never_above_a_finite_one():
    """A cross-encoder's NaN (an overflow in its logits) is ranked after every finite score."""
    ranked = order_by_score({0: math.nan, 1: 0.1, 2: -5.0, 3: 0.7}, 4)
    assert [i for i, _ in ranked] == [3, 1, 2, 0] and math.isnan(ranked[-1][1])
    assert [i for i, _ in order_by_score({0: math.nan, 1: 0.1, 2: math.nan}, 2)] == [1, 0]


def test_the_command_line_names_the_server_on_one_line(tmp_path, capsys, monkeypatch):
    for i, text in enumerate(DOCS):
        (tmp_path / f"doc{i}.txt").write_text(text, encoding="utf-8")
    with RecordingServer(lambda request: "the keeper") as chat, RerankServer(raw=b"[]") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.url)
        options = json.dumps(server_options(server, max_retries=0))
        argv = [
            "answer",
            "--corpus",
            str(tmp_path),
            "--question",
            QUESTION,
            "--llm",
            "openai:m",
            "--option",
            'rerank="server"',
            "--option",
            f"rerank_options={options}",
        ]
        assert main(argv) == 2
    err = capsys.readouterr().err
    line = err.rstrip("\n").split("\n")[-1]
    assert "Traceback" not in err and err.count("longctx:") == 1, err
    assert line.startswith(f"longctx: error: The rerank server at {server.url}/rerank failed")
    assert "the reply is a list" in line and chat.requests == []
