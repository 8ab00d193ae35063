"""The search agent beside the other strategies in every kind of run (#48 item 4): several
questions at once (``answer_many``) and an own-corpus run (``longctx run --corpus --questions``,
then ``report`` and ``export``), against the recording stub scripted to call ``search``
(:mod:`tests.search_agent_script`). The Ray fan-out of the same run is in ``tests/test_ray.py``."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from longctx import Budget, answer, answer_many, make_chat_model
from longctx.experiments.cli.app import main
from longctx.experiments.runner import latest_rows, read_rows
from longctx.graphs.metering.plan_check import BudgetMayStopWarning
from longctx.retrieval import Corpus, Document
from tests.recording_server import RecordingServer, tool_call, tool_reply
from tests.search_agent_script import DOCS, QUESTIONS, question_of, searching_agent, write_data

#: The document each question's search finds first, and the answer read from its snippet.
EXPECTED = {
    "hq": ("halvorsen.txt", "Halvorsen Maritime is"),
    "fleet": ("kestrel.txt", "Kestrel Aviation is"),
    "sauce": ("sorrento.txt", "Sorrento Foods is"),
}


def conversations(requests: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The requests the stub received, by question."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in requests:
        by.setdefault(question_of(r), []).append(r)
    return by


def check_searched_its_own_question(rows: dict[str, Any]) -> None:
    """Each question's answer: one search of its own words, the document it found first cited
    and read (the search step's ``doc_ids``), the answer from that document."""
    for qid, (doc, said) in EXPECTED.items():
        steps = rows[qid]["steps"]
        (search,) = [s for s in steps if s["node"] == "tools"]
        assert search["args"] == {"query": QUESTIONS[qid]} and search["status"] == "success"
        assert search["doc_ids"][0] == doc
        assert rows[qid]["answer"] == said and rows[qid]["evidence_doc_ids"] == [doc]


def test_answer_many_runs_each_question_in_its_own_conversation(tmp_path: Path) -> None:
    """Three questions at once: each conversation's second request carries its own search's
    result, never another question's."""
    docs, _ = write_data(tmp_path)
    corpus = Corpus.from_path(docs)
    with RecordingServer(searching_agent) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        answers = answer_many(
            corpus,
            list(QUESTIONS.values()),
            strategy="search_agent",
            llm=llm,
            cache_dir=tmp_path / "cache",
            concurrency=3,
            k=2,
        )
    rows = {
        qid: {
            "steps": [dict(s) for s in a.steps],
            "answer": a.answer,
            "evidence_doc_ids": [e.doc_id for e in a.evidence],
        }
        for qid, a in zip(QUESTIONS, answers)
    }
    check_searched_its_own_question(rows)
    by = conversations(server.requests)
    assert sorted(by) == sorted(QUESTIONS.values())
    for qid, question in QUESTIONS.items():
        first, second = by[question]
        assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
        assert second["messages"][2]["content"].count(f'"docid": "{EXPECTED[qid][0]}"') == 1
        assert first["tools"] == second["tools"]


def own_corpus_run(root: Path, *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``longctx run --corpus DIR --questions FILE --strategies search_agent [extra]`` at the
    scripted stub: the rows by question id and the requests the stub received."""
    docs, questions = write_data(root)
    out = root / "run"
    with RecordingServer(searching_agent) as server:
        saved = os.environ.get("OPENAI_BASE_URL")
        os.environ["OPENAI_BASE_URL"] = server.url
        try:
            argv = ["run", "--corpus", str(docs), "--questions", str(questions)]
            argv += ["--strategies", "search_agent", "--llm", "openai:rec"]
            argv += ["--option", "search_agent.k=2", "--out", str(out), "--yes", *extra]
            assert main(argv) == 0
        finally:
            if saved is None:
                del os.environ["OPENAI_BASE_URL"]
            else:
                os.environ["OPENAI_BASE_URL"] = saved
    rows = {r["sample_id"]: r for r in latest_rows(read_rows(out)).values()}
    return rows, list(server.requests)


def test_an_own_corpus_run_with_the_search_agent_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row ok with its search and citation, two requests a question; ``report`` scores
    the strategy."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    rows, requests = own_corpus_run(tmp_path)
    assert all(r["status"] == "ok" for r in rows.values()) and len(requests) == 2 * len(DOCS)
    check_searched_its_own_question(rows)
    assert main(["report", str(tmp_path / "run"), "--no-plots", "--no-html"]) == 0
    assert "search_agent" in json.loads((tmp_path / "run" / "report" / "scores.json").read_text())


BIG = "The harbour ledger lists every ship and every cargo of the year. " * 400  # ~5,200 tokens


def opening_then_document(request: dict[str, Any]) -> Any:
    """Open the big document, then answer."""
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_reply(tool_call("get_document", {"docid": "ledger"}, "call_open"))
    return "Explanation: it is there [ledger].\nExact Answer: ships\nConfidence: 50%"


def test_a_document_that_would_pass_the_prompt_budget_is_refused_before_the_request(
    tmp_path: Path,
) -> None:
    """``get_document`` returns a whole document (~5,200 tokens); the next request would pass
    ``max_prompt_tokens``: the budget guard refuses it before it is sent (the stub receives the
    first request only), and the answer is stopped by the budget with the tool round kept."""
    corpus = Corpus(
        [Document(doc_id="ledger", text=BIG), Document(doc_id="note", text="A short note.")]
    )
    with RecordingServer(opening_then_document) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetMayStopWarning)
            result = answer(
                corpus,
                "What does the ledger list?",
                strategy="search_agent",
                preset="get-document",
                llm=llm,
                cache_dir=tmp_path,
                budget=Budget(max_prompt_tokens=3_000),
            )
    assert len(server.requests) == 1
    assert result.stopped == "budget"
    (opened,) = [s for s in result.steps if s.node == "tools"]
    assert opened["tool"] == "get_document" and opened["chars"] > len(BIG)
    assert result.usage.llm_calls == 1


def test_a_document_that_would_fill_the_models_window_is_refused_before_the_request(
    tmp_path: Path,
) -> None:
    """A model with a 3,000-token window (``context_window``, where it reports none): each
    request's output cap is cut to the room its prompt leaves, and the request the document
    would push past the window is refused before it is sent, as a budget stop with the reason."""
    corpus = Corpus(
        [Document(doc_id="ledger", text=BIG), Document(doc_id="note", text="A short note.")]
    )
    with RecordingServer(opening_then_document) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        result = answer(
            corpus,
            "What does the ledger list?",
            strategy="search_agent",
            preset="get-document",
            llm=llm,
            cache_dir=tmp_path,
            context_window=3_000,
        )
    (sent,) = server.requests
    first = next(s for s in result.steps if s.node == "agent")
    assert sent.get("max_completion_tokens", sent.get("max_tokens")) == first["max_tokens"]
    assert 2_000 < first["max_tokens"] < 3_000  # the window less the opening prompt
    assert result.stopped == "budget"
    assert [s.node for s in result.steps] == ["ask", "agent", "tools", "stopped"]
    assert "the model's window of 3,000 tokens" in result.steps[-1]["reason"]
