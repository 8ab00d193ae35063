"""``search_agent`` against BrowseComp-Plus's official agent (texttron/BrowseComp-Plus @ 97c637c),
request by request: the official client's Responses requests, recorded at the stub by
``tests/browsecomp_agent_official.py`` (``tests/fixtures/browsecomp_agent/official_requests.json``),
and ours, sent through the chat model's tool calling to the stub's Chat Completions route with the
same scripted turns and the same search results. Identical: the user prompt, the tool schemas
(the Responses shape mapped to the Chat Completions one, docs/protocols.md), ``tool_choice``, each
request's output-token cap, each turn's calls and tool results (snippet truncation, errors,
not-found), the number of model calls, the final text; and the answer read from its "Exact
Answer:" line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import longctx.graphs.search_agent.graph as search_agent_graph
from longctx import answer, make_chat_model
from longctx.experiments.benchmarks.base import Sample
from longctx.experiments.reports.export import _answered, browsecomp_plus_line
from longctx.experiments.runner.rows import base_row, ok_row
from longctx.graphs.search_agent.prompts import QUERY_TEMPLATES
from longctx.graphs.search_agent.tools import responses_tool_definitions, tool_definitions
from longctx.retrieval.contract import Corpus, Document, Question
from tests.recording_server import RecordingServer

FIXTURE = Path(__file__).parent / "fixtures" / "browsecomp_agent" / "official_requests.json"
OFFICIAL = json.loads(FIXTURE.read_text())


class FixedSearcher:
    """The official run's searcher: the fixture's results and documents."""

    def __init__(self, *args: Any) -> None:
        return None

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        return [dict(r) for r in OFFICIAL["results"].get(query, [])][:k]

    def get_document(self, docid: str) -> dict[str, Any] | None:
        text = OFFICIAL["documents"].get(docid)
        return None if text is None else {"docid": docid, "text": text}


def _replies(turns: list[Any]) -> Any:
    count = {"n": 0}

    def reply(request: dict[str, Any]) -> Any:
        count["n"] += 1
        return turns[count["n"] - 1]

    return reply


CORPUS = Corpus([Document(doc_id=d, text=t) for d, t in OFFICIAL["documents"].items()])


def run_ours(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    """Our run of scenario ``name`` at the stub: the answer and the requests received."""
    scenario = OFFICIAL["scenarios"][name]
    s = scenario["settings"]
    monkeypatch.setattr(search_agent_graph, "CorpusSearcher", FixedSearcher)
    corpus = CORPUS
    with RecordingServer(_replies(scenario["turns"])) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        result = answer(
            corpus,
            OFFICIAL["question"],
            strategy="search_agent",
            llm=llm,
            cache_dir=tmp_path,
            get_document=True,
            query_template="QUERY_TEMPLATE",
            k=5,
            snippet_max_tokens=s["snippet_max_tokens"],
            max_tokens=s["max_tokens"],
            max_iterations=s["max_iterations"],
        )
    return result, json.loads(json.dumps(server.requests))


def official_turn(request: dict[str, Any]) -> dict[str, Any]:
    """What an official request holds, in the terms both share."""
    items = request["input"]
    return {
        "prompt": items[0]["content"],
        "calls": [
            (i["call_id"], i["name"], i["arguments"])
            for i in items
            if i.get("type") == "function_call"
        ],
        "results": [
            (i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"
        ],
        "tools": request["tools"],
        "tool_choice": request["tool_choice"],
        "max_tokens": request["max_output_tokens"],
    }


def our_turn(request: dict[str, Any]) -> dict[str, Any]:
    """The same of one of our Chat Completions requests (tools mapped to the Responses shape)."""
    messages = request["messages"]
    assert messages[0]["role"] == "user"
    return {
        "prompt": messages[0]["content"],
        "calls": [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for m in messages
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        ],
        "results": [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"],
        "tools": [{"type": "function", **t["function"]} for t in request["tools"]],
        "tool_choice": request["tool_choice"],
        "max_tokens": request.get("max_tokens", request.get("max_completion_tokens")),
    }


@pytest.mark.parametrize("name", sorted(OFFICIAL["scenarios"]))
def test_requests_match_the_official_agent(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    official = OFFICIAL["scenarios"][name]["official"]
    result, ours = run_ours(name, tmp_path, monkeypatch)
    assert len(ours) == official["model_calls"]
    for mine, theirs in zip(ours, official["requests"], strict=True):
        assert our_turn(mine) == official_turn(theirs)
        assert "temperature" not in mine  # the official run sends none: the model's default
    assert result.raw == official["final_text"]
    assert result.usage.llm_calls == official["model_calls"]


def test_the_answer_is_the_exact_answer_line_and_the_cited_documents_its_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = run_ours("answers", tmp_path, monkeypatch)
    assert result.answer == "Oslo"
    assert [e.doc_id for e in result.evidence] == ["101", "105"]
    finish = result.steps[-1]
    assert finish.node == "finish"
    assert finish["status"] == "completed"
    assert finish["searched"] == ["harbour town fjord 1048", "Harald Hardrada founded"]
    assert finish["opened"] == ["101"]


@pytest.mark.parametrize(
    ("name", "status"), [("turn_limit", "max_iterations"), ("token_cap", "max_tokens")]
)
def test_a_run_cut_by_its_limits_has_no_answer(
    name: str, status: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = run_ours(name, tmp_path, monkeypatch)
    assert result.answer == "" and result.steps[-1]["status"] == status


def test_the_prompts_and_schemas_are_the_official_ones() -> None:
    request = OFFICIAL["scenarios"]["answers"]["official"]["requests"][0]
    assert request["input"][0]["content"] == QUERY_TEMPLATES["QUERY_TEMPLATE"].format(
        Question=OFFICIAL["question"]
    )
    assert request["tools"] == responses_tool_definitions(5, include_get_document=True)
    assert [{"type": "function", **t["function"]} for t in tool_definitions(5, True)] == (
        request["tools"]
    )


def response_of(persisted: dict[str, Any]) -> str:
    """The reply ``evaluate_run.py`` judges: the last ``result`` item's text when it is one."""
    result = persisted["result"]
    return result[-1]["output"] if result and result[-1]["type"] == "output_text" else ""


@pytest.mark.parametrize("name", sorted(OFFICIAL["scenarios"]))
def test_the_export_records_what_the_official_client_persists(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our run exported (``longctx export --format official``'s writer, from the row the runner
    writes) carries what the official ``_persist_response`` wrote for the same conversation:
    the searches' documents as ``retrieved_docids`` (not a document opened by id, not the
    citations), every call counted by name (failed ones too), the status and the judged reply."""
    official = OFFICIAL["scenarios"][name]["official"]["persisted"]
    result, _ = run_ours(name, tmp_path, monkeypatch)
    qid = OFFICIAL["query_id"]
    sample = Sample(
        sample_id=qid,
        benchmark="browsecomp_plus",
        dataset="n6",
        corpus=CORPUS,
        question=Question(text=OFFICIAL["question"]),
        answers=("Oslo",),
        metadata={"query_id": qid},
    )
    row = json.loads(json.dumps(ok_row(base_row(sample, "search_agent"), result)))
    ours = browsecomp_plus_line(sample, _answered(row, False))
    assert ours["query_id"] == official["query_id"]
    assert ours["tool_call_counts"] == official["tool_call_counts"]
    assert ours["retrieved_docids"] == official["retrieved_docids"]
    assert ours["status"] == official["status"]
    assert response_of(ours) == response_of(official)
