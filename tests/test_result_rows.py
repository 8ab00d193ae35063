"""Result rows that always get written and always read back: hostile strategy results,
torn multi-byte tails, wrong-shape lines, a BOM, a corrupt manifest, duplicate strategies,
and retries that do not replay the cached reply that failed them."""

import json
import logging
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from longctx.agents.jsonsafe import MAX_CHARS
from longctx.agents.llm_cache import SQLiteLLMCache
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import (
    MANIFEST_FILE,
    RESULTS_FILE,
    RunConfig,
    RunFolderError,
    latest_rows,
    read_manifest,
    read_rows,
    run_experiment,
)
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.plugin.nodes import linear_graph
from longctx.graphs.plugin.registry import Strategy
from longctx.retrieval.contract import Evidence
from tests.scripted import ScriptedChatModel
from tests.test_runner import V2, config, v2_samples

HUGE = 100_000_000  # characters: the 100 MB cell of issue 27


@dataclass(frozen=True, kw_only=True)
class HostileConfig(StrategyConfig):
    """No options."""


def hostile(state, runtime):
    """What a strategy (or a SQL result inside one) may hand back, per sample."""
    sample = state["question"].metadata.get("sample_id", "v2-1")
    huge = "z" * HUGE
    if (
        sample == "v2-1"
    ):  # bytes, 1e999, nan, numpy, a lone surrogate and a 100 MB string: all converted, the row ok
        evidence = [Evidence(doc_id="d1", title=b"\x00\xffblob", text=huge, score=1e999)]
        step = {
            "node": "sql",
            "rows": [[b"\x89PNG\xff", 1e999, float("nan"), np.int64(4)]],
            "cell": huge,
            "bad": "\ud800",
        }
        return {
            "answer": "A",
            "raw": "The correct answer is (A)",
            "evidence": evidence,
            "steps": [step],
        }
    if sample == "v2-2":  # a 100 MB answer cannot be scored as if the model said it: a failed row
        return {"answer": huge, "raw": huge, "steps": [{"node": "sql"}]}
    return {
        "answer": "C",
        "raw": "The correct answer is (C)",
        "evidence": [Evidence(doc_id="d3", title="t", text=None)],
    }  # text None: no snippet


def build_hostile(config=None):
    return linear_graph("hostile", dict, ("hostile", hostile))


@pytest.fixture
def hostile_strategy(monkeypatch):
    monkeypatch.setitem(
        STRATEGIES._entries,
        "hostile",
        Strategy(name="hostile", build_graph=build_hostile, config_cls=HostileConfig),
    )


def _refuse(name):
    raise AssertionError(f"{name} is not JSON")


def _strict_lines(path):
    return [
        json.loads(line, parse_constant=_refuse)
        for line in path.read_bytes().decode("utf-8").splitlines()
    ]


def test_hostile_results_never_stop_a_run_and_the_rerun_finishes(tmp_path, hostile_strategy):
    cfg = RunConfig(
        benchmark="longbench_v2", strategies=("hostile",), data_path=V2, llm_cache=False
    )
    counts = run_experiment(cfg, tmp_path, llm=ScriptedChatModel(), show_progress=False)
    assert counts["ok"] == 1 and counts["failed"] == 2
    rows = {
        r["sample_id"]: r for r in _strict_lines(tmp_path / RESULTS_FILE)
    }  # strict JSON: no Infinity, no NaN
    ok = rows["v2-1"]
    assert ok["status"] == "ok" and ok["prediction"] == "The correct answer is (A)"
    assert (
        ok["evidence"][0]["title"] == "<6 bytes: 00ff626c6f62>"
        and ok["evidence"][0]["score"] is None
    )
    step = ok["steps"][0]
    assert step["rows"] == [["<5 bytes: 89504e47ff>", None, None, 4]] and step["bad"] == "\ufffd"
    assert step["cell"].endswith(f"...[cut: {HUGE - MAX_CHARS:,} more characters]")
    assert (tmp_path / RESULTS_FILE).stat().st_size < 1_000_000
    assert rows["v2-2"]["status"] == "failed" and rows["v2-2"]["error"].startswith(
        "ResultNotWritable: its prediction holds 100,000,000 characters"
    )
    assert (
        rows["v2-3"]["status"] == "failed"
        and "ResultNotWritable: TypeError" in rows["v2-3"]["error"]
    )
    again = run_experiment(cfg, tmp_path, llm=ScriptedChatModel(), show_progress=False)
    assert (
        again["skipped"] == 1 and again["failed"] == 2
    )  # retried, failed again with reasons, and finished
    assert len(_strict_lines(tmp_path / RESULTS_FILE)) == 5
    build_report(tmp_path, plots=False)  # the report reads them too
    assert json.loads((tmp_path / "report" / "scores.json").read_text(), parse_constant=_refuse)[
        "hostile"
    ]


def test_answer_json_is_strict_json_whatever_the_strategy_returns(
    tmp_path, hostile_strategy, capsys, monkeypatch
):
    from benchmarks.stub_server import stub_server
    from longctx.experiments.cli.app import main

    monkeypatch.setattr(
        sys.modules[__name__], "HUGE", 2 * MAX_CHARS
    )  # printing and parsing 100 MB is not the point here
    (tmp_path / "a.txt").write_text("Alpha reported revenue.")
    with stub_server(latency=0.0) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        assert (
            main(
                [
                    "answer",
                    "--corpus",
                    str(tmp_path / "a.txt"),
                    "--question",
                    "q",
                    "--strategy",
                    "hostile",
                    "--llm",
                    "openai:stub",
                    "--json",
                ]
            )
            == 0
        )
    out = json.loads(capsys.readouterr().out, parse_constant=_refuse)
    assert (
        out["evidence"][0]["score"] is None
        and out["evidence"][0]["title"] == "<6 bytes: 00ff626c6f62>"
    )
    assert (
        out["steps"][0]["rows"] == [["<5 bytes: 89504e47ff>", None, None, 4]]
        and len(out["steps"][0]["cell"]) == 2 * MAX_CHARS
    )  # nothing cut


def test_a_retry_does_not_replay_the_cached_reply_that_failed_it(tmp_path):
    """The first reply is too long to keep: the row fails. Its rerun must ask afresh instead of
    replaying the cached reply forever; the fresh reply replaces the cache entry."""
    sent = []

    def reply(prompt: str) -> str:
        sent.append(prompt)
        return "A" * (MAX_CHARS + 1) if len(sent) == 1 else "The correct answer is (A)"

    cfg = config(
        strategies=("full_context",), strategy_options={}, llm_cache=True, concurrency=1, limit=1
    )
    first = run_experiment(
        cfg, tmp_path, llm=ScriptedChatModel(reply_fn=reply), show_progress=False
    )
    assert first["failed"] == 1 and "ResultNotWritable" in read_rows(tmp_path)[0]["error"]
    again = run_experiment(
        cfg, tmp_path, llm=ScriptedChatModel(reply_fn=reply), show_progress=False
    )
    assert again["ok"] == 1 and len(sent) == 2  # asked afresh, not replayed
    (tmp_path / RESULTS_FILE).unlink()
    replayed = run_experiment(
        cfg, tmp_path, llm=ScriptedChatModel(reply_fn=reply), show_progress=False
    )
    assert (
        replayed["ok"] == 1 and len(sent) == 2
    )  # an ordinary rerun replays the entry, now the good reply
    assert read_rows(tmp_path)[0]["usage"]["cached_calls"] == 1


def test_a_refreshing_cache_stores_but_never_replays(tmp_path):
    cache = SQLiteLLMCache(tmp_path / "c.sqlite", all_calls=True)
    chat = ScriptedChatModel(reply_fn=lambda p: "old")
    chat.cache = cache
    chat.invoke("q")
    fresh = ScriptedChatModel(reply_fn=lambda p: "new")
    fresh.cache = cache.refreshing()
    assert fresh.invoke("q").content == "new"
    replay = ScriptedChatModel(reply_fn=lambda p: "never called")
    replay.cache = cache
    assert replay.invoke("q").content == "new"


def _chinese_run(tmp_path):
    cfg = config(strategies=("full_context",), strategy_options={})
    run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "答案是 (A)。The correct answer is (A)"),
        show_progress=False,
    )
    return cfg


def test_a_torn_tail_inside_a_multibyte_character_is_repaired(tmp_path, caplog):
    cfg = _chinese_run(tmp_path)
    path = tmp_path / RESULTS_FILE
    data = path.read_bytes()
    last = data.rindex(b"\n", 0, len(data) - 1) + 1
    cut = data.index("答".encode(), last) + 1  # inside the 3-byte character of the last row
    path.write_bytes(data[:cut])
    with caplog.at_level(logging.WARNING):
        rows = read_rows(tmp_path)
    assert len(rows) == 2 and f"{path}: line 3 is torn" in caplog.text
    again = run_experiment(
        cfg, tmp_path, llm=ScriptedChatModel(reply_fn=lambda p: "答案是 (B)"), show_progress=False
    )
    assert again["ok"] == 1 and again["skipped"] == 2
    assert len(_strict_lines(path)) == 3 and len(latest_rows(read_rows(tmp_path))) == 3


def test_unreadable_and_wrong_shape_lines_are_skipped_and_named(tmp_path, caplog):
    cfg = _chinese_run(tmp_path)
    path = tmp_path / RESULTS_FILE
    good = path.read_bytes().splitlines(keepends=True)
    bad = [
        b"[1,2]\n",
        b"{}\n",
        b'"text"\n',
        b'{"sample_id": "v2-1", "strategy": "x", "status": "maybe", "corpus_tokens": 1}\n',
        b"\xff\xfe not utf-8\n",
        b"{not json\n",
        b"\n",
    ]
    path.write_bytes(good[0] + b"".join(bad) + b"".join(good[1:]))
    with caplog.at_level(logging.WARNING):
        rows = read_rows(tmp_path)
    assert len(rows) == 3
    for number, words in (
        (2, "a JSON list"),
        (3, "without sample_id"),
        (4, "a JSON str"),
        (5, "'maybe'"),
        (6, "not UTF-8"),
    ):
        assert f"{path}, line {number}: " in caplog.text and words in caplog.text
    assert "1 more unreadable lines skipped" in caplog.text  # line 7, beyond the five named
    again = run_experiment(
        cfg, tmp_path, llm=ScriptedChatModel(reply_fn=lambda p: "x"), show_progress=False
    )
    assert again["skipped"] == 3 and again["ok"] == 0


def test_a_bom_before_the_first_row_loses_nothing(tmp_path):
    cfg = _chinese_run(tmp_path)
    path = tmp_path / RESULTS_FILE
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert len(latest_rows(read_rows(tmp_path))) == 3
    chat = ScriptedChatModel(reply_fn=lambda p: "x")
    assert (
        run_experiment(cfg, tmp_path, llm=chat, show_progress=False)["skipped"] == 3
        and not chat.calls
    )


def test_a_whole_last_row_without_its_newline_is_kept(tmp_path):
    def flaky(prompt: str) -> str:
        if "report 2" in prompt:
            raise ConnectionError("down")
        return "The correct answer is (A)"

    cfg = config(strategies=("full_context",), strategy_options={}, concurrency=1)
    run_experiment(cfg, tmp_path, llm=ScriptedChatModel(reply_fn=flaky), show_progress=False)
    path = tmp_path / RESULTS_FILE
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (B)"),
        show_progress=False,
    )
    rows = _strict_lines(path)
    assert len(rows) == 4 and all(r["status"] == "ok" for r in latest_rows(rows).values())


@pytest.mark.parametrize(
    "corrupt", [b"", b'{"invocations": [', b"[1, 2]", b"\xff\xfe", b'{"config": {}}']
)
def test_a_corrupt_manifest_is_set_aside_and_rebuilt(tmp_path, caplog, corrupt):
    cfg = _chinese_run(tmp_path)
    (tmp_path / MANIFEST_FILE).write_bytes(corrupt)
    with pytest.raises(RunFolderError, match=f"{tmp_path / MANIFEST_FILE} is unreadable"):
        build_report(tmp_path, plots=False, html=False)
    with caplog.at_level(logging.WARNING):
        counts = run_experiment(
            cfg, tmp_path, llm=ScriptedChatModel(reply_fn=lambda p: "x"), show_progress=False
        )
    assert counts["skipped"] == 3 and "set aside as manifest.json.corrupt-" in caplog.text
    aside = list(tmp_path.glob("manifest.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == corrupt
    manifest = read_manifest(tmp_path)
    assert manifest["config"]["strategies"] == ["full_context"]
    rebuilt, now = manifest["invocations"]
    assert (
        rebuilt["set_aside"] == aside[0].name
        and rebuilt["ok"] == 3
        and now["skipped"] == 3
        and "finished" in now
    )
    build_report(tmp_path, plots=False, html=False)


def test_duplicate_strategies_run_once_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        cfg = config(strategies=("full_context", "rag", "full_context"))
    assert (
        cfg.strategies == ("full_context", "rag")
        and "more than once run once: full_context" in caplog.text
    )
    chat = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    counts = run_experiment(cfg, tmp_path, llm=chat, show_progress=False)
    assert counts["pairs"] == 6 and len(read_rows(tmp_path)) == 6 and len(chat.calls) == 6


def test_a_retry_over_a_served_model_asks_the_server_again(tmp_path, monkeypatch):
    """The same rule with the real OpenAI-compatible client: the retried pair's call is sent,
    the others of an ordinary rerun are replayed."""
    from benchmarks.stub_server import stub_server

    cfg = config(llm="openai:stub", llm_cache=True, strategies=("rag",), limit=2)
    with stub_server(latency=0.0) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        run_experiment(cfg, tmp_path, show_progress=False)
        rows = read_rows(tmp_path)
        failed = {**rows[0], "status": "failed", "error": "ValueError: the reply made the row fail"}
        with open(tmp_path / RESULTS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(failed) + "\n")
        again = run_experiment(cfg, tmp_path, show_progress=False)
    assert again["ok"] == 1 and again["skipped"] == 1
    retried = read_rows(tmp_path)[-1]
    assert (
        retried["sample_id"] == rows[0]["sample_id"]
        and retried["usage"]["llm_calls"] == 1
        and retried["usage"]["cached_calls"] == 0
    )


def test_a_ray_unit_retrying_a_pair_does_not_replay_the_cache(tmp_path):
    """The Ray worker's unit (run here without Ray: it is a plain function) follows the
    same rule."""
    from longctx.experiments.runner.ray_runner import _unit_task

    cfg = config(strategies=("full_context",), strategy_options={}, llm_cache=True)
    sample = v2_samples()[:1]
    cache = str(tmp_path / "llm_cache.sqlite")
    first = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    assert (
        _unit_task(sample, "full_context", cfg, first, None, cache)[0]["prediction"]
        == "The correct answer is (A)"
    )
    replay = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (B)")
    assert (
        _unit_task(sample, "full_context", cfg, replay, None, cache)[0]["prediction"]
        == "The correct answer is (A)"
        and not replay.calls
    )
    retry = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (B)")
    assert (
        _unit_task(sample, "full_context", cfg, retry, None, cache, True)[0]["prediction"]
        == "The correct answer is (B)"
        and len(retry.calls) == 1
    )
