"""Issue #47's first proof: a tool-loop strategy added in its own folder
(``tests/fixtures/search_agent``: ``search`` and ``get_document`` over the corpus's BM25 index) as a
third party adds one, the engine through ``longctx.graphs.plugin.api`` only, registered by an entry
point: ``answer()`` runs it against the recording stub with scripted tool calls, and its estimate
has no most until a budget caps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.test_plugin_surface import library_imports

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "search_agent"

RUN = """
    import json, warnings
    from longctx import Budget, Corpus, STRATEGIES, answer, estimate, make_chat_model
    from longctx.graphs.metering.plan_check import UnboundedCostWarning
    from tests.recording_server import RecordingServer, tool_call, tool_reply

    texts = [
        "The harbour of Bergen is the oldest.",
        "Oslo has the largest harbour in Norway.",
        "Trondheim lies further north.",
    ]
    corpus = Corpus.from_texts(texts, titles=["Bergen", "Oslo", "Trondheim"])

    def agent(request):  # search, read the document found, answer
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        if turn == 0:
            return tool_reply(tool_call("search", {"query": "largest harbour"}))
        if turn == 1:
            return tool_reply(tool_call("get_document", {"number": 1}))
        return "Oslo"

    out = {"third_party": type(STRATEGIES.get("toy_search_agent").make_config()).__module__}
    with RecordingServer(agent) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            question = "Which city has the largest harbour?"
            result = answer(corpus, question, strategy="toy_search_agent", llm=llm)
        out["warned"] = [
            type(w.message).__name__ for w in caught if issubclass(w.category, UnboundedCostWarning)
        ]
        out["answer"], out["stopped"] = result.answer, result.stopped
        out["requests"] = len(server.requests)
        read = [m.get("content") for m in server.requests[2]["messages"] if m["role"] == "tool"]
        out["read"] = read
        out["tools_sent"] = [t["function"]["name"] for t in server.requests[0].get("tools", [])]
    def searcher(request):  # searches on every turn
        return tool_reply(tool_call("search", {"query": "harbour"}))

    with RecordingServer(searcher) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        budget = Budget(max_llm_calls=4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stopped = answer(
                corpus, "Which harbour?", strategy="toy_search_agent", llm=llm, budget=budget
            )
        out["budget_warned"] = [
            type(w.message).__name__ for w in caught if issubclass(w.category, UserWarning)
        ]
        out["budget_requests"], out["budget_stopped"] = len(server.requests), stopped.stopped
    plan = estimate(corpus, "Which harbour?", strategy="toy_search_agent", llm=llm)
    held = estimate(corpus, "Which harbour?", strategy="toy_search_agent", llm=llm, budget=budget)
    unbounded = "unbounded" in plan.describe()
    out["plan"] = [plan.calls, plan.max_calls, plan.max_prompt_tokens, unbounded]
    out["capped"] = [held.max_calls, held.details.get("capped_by")]
    print(json.dumps(out))
"""


def _third_party(tmp_path: Path) -> Path:
    """The fixture as an installed distribution: its entry point in a ``.dist-info`` folder of a
    site folder."""
    dist = tmp_path / "search_agent-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: search-agent\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[longctx.strategies]\ntoy_search_agent = search_agent.graph:build_graph\n"
    )
    return tmp_path


def test_the_search_agent_folder_imports_only_the_plugin_surface():
    assert library_imports(FOLDER, "search_agent") == set()


def test_a_tool_loop_strategy_in_its_own_folder_answers_and_is_capped_by_its_budget(tmp_path):
    site = _third_party(tmp_path / "site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(FOLDER.parent), str(ROOT)]),
        "LONGCTX_CACHE_DIR": str(tmp_path / "cache"),
    }
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RUN)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["third_party"] == "search_agent.graph" and out["tools_sent"] == [
        "search",
        "get_document",
    ]
    assert (out["answer"], out["stopped"], out["requests"]) == ("Oslo", None, 3)
    search, document = out["read"]  # the BM25 hits, best first, then the document the model read
    assert (
        search.startswith("[doc 1] Oslo: ")
        and document == "Oslo has the largest harbour in Norway."
    )
    assert out["warned"] == ["UnboundedCostWarning"]  # no budget caps an unbounded plan
    assert (out["budget_requests"], out["budget_stopped"], out["budget_warned"]) == (
        4,
        "budget",
        [],
    )
    assert out["plan"] == [1, None, None, True]
    assert out["capped"] == [4, "budget: 4 calls"]
