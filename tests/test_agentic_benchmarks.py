"""Both agentic strategies beside ours in the agentic-era benchmarks' tables: ``longctx run`` on
OOLONG (generated windows) and BrowseComp-Plus (the small fixture of tests/test_browsecomp_plus.py)
with ``rag``, ``rlm`` and ``search_agent`` against one recording server, then ``report`` (a row per
strategy) and, for BrowseComp-Plus, the official run directory (what ``search_agent``'s searches
retrieved)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from longctx.experiments.cli.app import main
from tests.recording_server import RecordingServer, tool_call, tool_reply

BROWSECOMP = Path(__file__).parent / "fixtures" / "benchmarks" / "browsecomp_plus"
STRATEGIES = ("rag", "rlm", "search_agent")
REPLY = "Explanation: read it [1000].\nExact Answer: Port Velm\nConfidence: 70%"
JUDGED = "extracted_final_answer: Port Velm\nreasoning: same\ncorrect: yes\nconfidence: 70"


def reply(request: dict[str, Any]) -> Any:
    """rag: one reply; rlm: a root whose first turn's code sets the answer; search_agent: one
    search, then an answer with ``Exact Answer:``; a Responses API judge: yes."""
    if isinstance(request.get("input"), str):  # evaluate_with_openai.py's judge
        return JUDGED
    messages = request.get("messages", [])
    if request.get("tools"):
        if any(m.get("role") == "tool" for m in messages):
            return REPLY
        return tool_reply(tool_call("search", {"query": "Port Velm harbour"}))
    system = str(messages[0].get("content") or "") if messages else ""
    if "answer" in system and "repl" in system:  # RLM's root prompt
        code = f"answer['content'] = {REPLY!r}\nanswer['ready'] = True"
        return f"Done.\n```repl\n{code}\n```"
    return REPLY


def _run(benchmark: str, data: Path, out: Path, *extra: str) -> None:
    argv = ["run", "--benchmark", benchmark, "--data", str(data), "--llm", "openai:rec"]
    argv += ["--strategies", ",".join(STRATEGIES), "--out", str(out), "--yes", *extra]
    # rlm's code in this process: the jail is not on every machine (tests/test_sandbox_jail.py)
    argv += ["--option", "rag.top_k=2", "--option", "rlm.repl=unsafe_inprocess"]
    assert main(argv) == 0
    assert main(["report", str(out), "--no-plots", "--no-html"]) == 0


def _rows(table: str) -> set[str]:
    """The strategies named in the first column of a markdown table's rows."""
    return {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp, RecordingServer(reply) as recording:
        mp.setenv("LONGCTX_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("OPENAI_BASE_URL", recording.url)
        yield recording


@pytest.fixture(scope="module")
def browsecomp(tmp_path_factory: pytest.TempPathFactory, server: RecordingServer) -> Path:
    """A BrowseComp-Plus run of the three strategies, reported and exported."""
    run = tmp_path_factory.mktemp("browsecomp") / "run"
    _run("browsecomp_plus", BROWSECOMP, run, "--subset", "n10")
    assert main(["export", str(run), "--format", "official"]) == 0
    return run


def _exported(run: Path, strategy: str) -> list[dict[str, Any]]:
    files = sorted((run / "official" / "runs" / strategy).glob("*.json"))
    return [json.loads(f.read_text()) for f in files]


def test_oolong_tables_have_a_row_per_strategy(tmp_path: Path, server: RecordingServer) -> None:
    from longctx.experiments import oolong_gen

    data = tmp_path / "oolong"
    oolong_gen.main(["--out", str(data), "--lengths", "8K"])
    _run("oolong", data, tmp_path / "run", "--inject-once")
    scores = json.loads((tmp_path / "run" / "report" / "scores.json").read_text())
    assert all(scores[s]["n"] == scores["rag"]["n"] > 0 for s in STRATEGIES)
    assert all(scores[s]["n_failed"] == 0 for s in STRATEGIES)
    assert all(set(scores[s]["tasks"]) == {"counting", "user", "timeline"} for s in STRATEGIES)
    summary = (tmp_path / "run" / "report" / "summary.md").read_text()
    assert _rows(summary) >= set(STRATEGIES)
    table = (tmp_path / "run" / "report" / "by_task_length.md").read_text()
    sections = table.split("\n## ")[1:]
    assert [x.split("\n", 1)[0] for x in sections] == list(STRATEGIES)
    assert all("Official overall (synth, `overall.txt`): 0/8" in x for x in sections)


def test_browsecomp_plus_tables_and_export_have_each_strategy(browsecomp: Path) -> None:
    scores = json.loads((browsecomp / "report" / "scores.json").read_text())
    assert all(scores[s]["overall"] == round(100 / 3, 2) for s in STRATEGIES)  # 101's answer
    assert scores["search_agent"]["tasks"]["search calls / question"] == {"n10": 1.0}
    assert _rows((browsecomp / "report" / "summary.md").read_text()) >= set(STRATEGIES)
    for strategy in STRATEGIES:
        exported = _exported(browsecomp, strategy)
        assert [e["query_id"] for e in exported] == ["101", "102", "103"], strategy
        assert all(e["status"] == "completed" for e in exported), strategy
        assert all(e["result"][0]["output"] == REPLY for e in exported), strategy
    agent = _exported(browsecomp, "search_agent")
    assert all(e["tool_call_counts"] == {"search": 1} for e in agent)


def test_search_agents_export_names_the_documents_its_search_retrieved(browsecomp: Path) -> None:
    assert all(e["retrieved_docids"] for e in _exported(browsecomp, "search_agent"))


def test_report_judges_with_the_openai_setting_when_asked(
    browsecomp: Path, server: RecordingServer, tmp_path: Path
) -> None:
    """``longctx report --judge openai:gpt-4.1 --judge-setting evaluate_with_openai``: every
    completed answer judged over the Responses API with search_agent/prompts.py's template."""
    run = tmp_path / "run"
    shutil.copytree(browsecomp, run)
    before = len(server.requests)
    argv = ["report", str(run), "--no-plots", "--no-html", "--judge", "openai:gpt-4.1"]
    assert main([*argv, "--judge-setting", "evaluate_with_openai"]) == 0
    judged = server.requests[before:]
    assert len(judged) == 3 * len(STRATEGIES)
    assert all(set(r) == {"model", "input", "max_output_tokens"} for r in judged)
    assert all("focusing only on if there are meaningful" in r["input"] for r in judged)
    scores = json.loads((run / "report" / "scores.json").read_text())
    assert all(scores[s]["overall"] == 100.0 for s in STRATEGIES)
    assert {scores[s]["judge_setting"] for s in STRATEGIES} == {"evaluate_with_openai"}
    assert main([*argv, "--judge-setting", "gpt"]) != 0
