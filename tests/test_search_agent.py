"""``search_agent`` end to end over a real BM25 index with a scripted tool-calling model: the
answer, its evidence, its steps, its live events, its cost plan, its budget stop, its resume after a
crash, its report views and its ceiling (its requests against the official agent:
``tests/test_search_agent_parity.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longctx import Budget, answer, estimate
from longctx.agents.events import ToolCallEvent, ToolResultEvent
from longctx.agents.streaming import stream_answer
from longctx.graphs import STRATEGIES
from longctx.graphs.metering.plan_check import BudgetMayStopWarning
from longctx.graphs.plugin.ceiling import CeilingEnv, CeilingItem
from longctx.graphs.search_agent.graph import cited_docids, exact_answer
from longctx.graphs.search_agent.presentation import finish_view, tool_view
from longctx.graphs.search_agent.tools import Cl100k, snippet
from longctx.retrieval.contract import Corpus, Document
from tests.scripted_tools import ToolScriptedChatModel, named_call

QUESTION = "Which harbour town was founded by Harald Hardrada?"
ANSWER = "Explanation: The sagas say so [d2].\nExact Answer: Oslo\nConfidence: 80%"


def corpus() -> Corpus:
    filler = " ".join(f"word{i}" for i in range(300))
    return Corpus(
        [
            Document(doc_id="d1", text=f"Bergen is a rainy city on the west coast. {filler}"),
            Document(
                doc_id="d2",
                text=f"Oslo, a harbour town, was founded by Harald Hardrada around 1048. {filler}",
            ),
            Document(doc_id="d3", text="Paris is the capital of France."),
        ]
    )


def agent(fail_at: int | None = None) -> ToolScriptedChatModel:
    """Search, open the best document, answer; raises at call ``fail_at`` (a crash)."""
    turns: list[Any] = [
        [named_call("search", query="harbour town founded Harald Hardrada")],
        [named_call("get_document", docid="d2")],
        ANSWER,
    ]
    count = {"n": 0}

    def reply(prompt: str, tools: Any) -> Any:
        count["n"] += 1
        if count["n"] == fail_at:
            raise RuntimeError("killed")
        return turns[min(count["n"], len(turns)) - 1]

    return ToolScriptedChatModel(reply_fn=reply)


OPTIONS = {"get_document": True, "query_template": "QUERY_TEMPLATE", "snippet_max_tokens": 16}


def test_it_searches_opens_and_answers_over_a_real_bm25_index(tmp_path: Path) -> None:
    llm = agent()
    result = answer(
        corpus(), QUESTION, strategy="search_agent", llm=llm, cache_dir=tmp_path, **OPTIONS
    )
    assert result.answer == "Oslo" and result.raw == ANSWER
    assert [e.doc_id for e in result.evidence] == ["d2"]
    assert result.usage.llm_calls == 3
    assert [s.node for s in result.steps] == [
        "ask", "agent", "tools", "agent", "tools", "agent", "finish",
    ]  # fmt: skip
    search = json.loads(llm.calls[1]["messages"][-1].content)
    assert search[0]["docid"] == "d2"  # BM25's best document for the query
    assert search[0]["snippet"] == snippet(corpus()[1].text, 16, Cl100k())
    assert len(search) == 3 and result.steps[-1]["opened"] == ["d2"]


def test_each_tool_call_is_a_live_event() -> None:
    events = list(
        stream_answer(corpus(), QUESTION, strategy="search_agent", llm=agent(), **OPTIONS)
    )
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [c.name for c in calls] == ["search", "get_document"]
    assert [r.name for r in results] == ["search", "get_document"]
    assert all(r.status == "ok" for r in results)


def test_the_plan_runs_from_one_call_to_the_official_turn_limit() -> None:
    plan = estimate(corpus(), QUESTION, strategy="search_agent", llm=agent())
    assert (plan.calls, plan.max_calls) == (1, 100)
    assert plan.completion_tokens == 10_000
    small = estimate(corpus(), QUESTION, strategy="search_agent", llm=agent(), max_iterations=4)
    assert small.max_calls == 4


def test_a_budget_stop_keeps_the_rounds_and_a_rerun_asks_only_the_refused_turn(
    tmp_path: Path,
) -> None:
    first = agent()
    with pytest.warns(BudgetMayStopWarning, match="1-100 calls"):
        stopped = answer(
            corpus(),
            QUESTION,
            strategy="search_agent",
            llm=first,
            cache_dir=tmp_path,
            budget=Budget(max_llm_calls=2),
            checkpoint=True,
            **OPTIONS,
        )
    assert stopped.stopped == "budget" and len(first.calls) == 2
    assert [s.node for s in stopped.steps][:5] == ["ask", "agent", "tools", "agent", "tools"]
    second = agent()
    second.reply_fn("", None)  # its script continues at turn 2, as the model would
    second.reply_fn("", None)
    again = answer(
        corpus(),
        QUESTION,
        strategy="search_agent",
        llm=second,
        cache_dir=tmp_path,
        checkpoint=True,
        **OPTIONS,
    )
    assert len(second.calls) == 1 and again.answer == "Oslo"


def test_a_run_killed_mid_conversation_resumes_at_its_last_finished_round(tmp_path: Path) -> None:
    crashing = agent(fail_at=3)
    with pytest.raises(RuntimeError, match="killed"):
        answer(
            corpus(),
            QUESTION,
            strategy="search_agent",
            llm=crashing,
            cache_dir=tmp_path,
            checkpoint=True,
            **OPTIONS,
        )
    resumed = agent()
    resumed.reply_fn("", None)
    resumed.reply_fn("", None)
    result = answer(
        corpus(),
        QUESTION,
        strategy="search_agent",
        llm=resumed,
        cache_dir=tmp_path,
        checkpoint=True,
        **OPTIONS,
    )
    assert len(resumed.calls) == 1  # turns 1 and 2 and their tool rounds are not run again
    assert result.answer == "Oslo" and result.steps[-1]["searched"] == [
        "harbour town founded Harald Hardrada"
    ]


def test_the_exact_answer_line_and_the_citations_are_read_as_the_official_evaluation() -> None:
    assert exact_answer("Explanation: x\n**Exact Answer:** 1048 AD\nConfidence: 9%") == "1048 AD"
    assert exact_answer("no template at all ") == "no template at all"
    text = "A [12]. B [12, 40]. C 【7】. D [see above]."
    assert cited_docids(text, ["7", "12", "40", "99"]) == ["12", "40", "7"]


def test_the_report_shows_each_query_and_document() -> None:
    call = tool_view({"tool": "search", "args": {"query": "a <b>"}, "status": "ok"}, {})
    assert "a &lt;b&gt;" in call.html and "search" in call.html
    end = finish_view(
        {"status": "completed", "turns": 3, "searched": ["q1", "q2"], "opened": ["d2"]}, {}
    )
    assert "<li>q1</li>" in end.html and "d2" in end.html


def test_the_ceiling_counts_the_evidence_its_search_returns_for_the_question(
    tmp_path: Path,
) -> None:
    spec = STRATEGIES.get("search_agent")
    assert spec.ceiling is not None
    cfg = spec.make_config(k=1)
    item = CeilingItem(sample_id="s", corpus=corpus(), question=_q(), evidence=("d2", "d3"))
    reach = spec.ceiling.reach(cfg, item, CeilingEnv(cache_dir=tmp_path))
    assert (reach.reached, reach.total) == (1, 2)


def _q() -> Any:
    from longctx.retrieval.contract import Question

    return Question(text=QUESTION)


def test_a_model_without_tool_calling_searches_through_json_blocks(tmp_path: Path) -> None:
    """A model without tool calling (no ``bind_tools``): the tools described in the text, a
    ```json``` block read back as a call, its result sent as a user turn."""
    from tests.scripted import ScriptedChatModel

    replies = iter(
        [
            '```json\n{"tool": "search", "arguments": {"query": "Harald Hardrada"}}\n```',
            ANSWER,
        ]
    )
    llm = ScriptedChatModel(reply_fn=lambda prompt: next(replies))
    result = answer(
        corpus(), QUESTION, strategy="search_agent", llm=llm, cache_dir=tmp_path, **OPTIONS
    )
    assert result.answer == "Oslo" and result.steps[1]["mode"] == "json"
    assert result.steps[-1]["searched"] == ["Harald Hardrada"]
    assert '"docid": "d2"' in llm.calls[-1]["prompt"]


class _WholeEncode:
    """cl100k encoding the whole text, as the official rule does."""

    def encode(self, text: str) -> list[int]:
        return Cl100k().encode(text)

    def decode(self, ids: Any) -> str:
        return Cl100k().decode(ids)


@pytest.mark.parametrize("limit", [1, 7, 64, 512])
def test_a_snippet_cut_from_the_documents_start_equals_the_official_rule(limit: int) -> None:
    """Encoding only the start of a document (``Cl100k.encode_prefix``) cuts the same snippet as
    encoding it whole, at every boundary: exactly ``limit`` tokens, one more, none to cut."""
    words = " ".join(f"word{i}, 12345 ünïcode ☕" for i in range(400))
    texts = [
        words,
        "x" * 9_000,  # no place to cut
        "北京是中国的首都。" * 500,
        "line\n\n\n   spaced\t\ttabs " * 300,
        "short",
        "",
    ]
    tokenizer = Cl100k()
    texts += [tokenizer.decode(tokenizer.encode(words)[:n]) for n in (limit, limit + 1)]
    for text in texts:
        assert snippet(text, limit, tokenizer) == snippet(text, limit, _WholeEncode())
