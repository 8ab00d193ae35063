"""The experiment runner and report: resumable rows, failures recorded, manifest, cache, faults."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.stub_server import stub_server
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.reports.report import build_report, length_bucket
from longctx.experiments.runner import RunConfig, latest_rows, read_rows, run_experiment
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
V2 = str(FIXTURES / "longbench_v2")


def v2_samples():
    return load_benchmark("longbench_v2", V2)


def config(**kw) -> RunConfig:
    base = dict(
        benchmark="longbench_v2",
        strategies=("rag", "full_context"),
        data_path=V2,
        llm_cache=False,
        concurrency=2,
    )
    base["strategy_options"] = {"rag": {"top_k": 2}}
    return RunConfig(**{**base, **kw})


def test_rows_and_manifest(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    counts = run_experiment(config(), tmp_path, llm=llm, show_progress=False)
    rows = read_rows(tmp_path)
    assert counts == {"samples": 3, "pairs": 6, "skipped": 0, "changed": 0, "ok": 6, "failed": 0}
    assert {(r["sample_id"], r["strategy"]) for r in rows} == {
        (s, t) for s in ("v2-1", "v2-2", "v2-3") for t in ("rag", "full_context")
    }
    row = rows[0]
    assert (
        row["status"] == "ok"
        and row["prediction"] == "The correct answer is (A)"
        and row["usage"]["llm_calls"] == 1
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert (
        manifest["config"]["strategies"] == ["rag", "full_context"]
        and manifest["model"] == "ScriptedChatModel"
    )
    assert manifest["library_version"] and manifest["benchmark_version"] == 2
    inv = manifest["invocations"][0]
    assert inv["started"] <= inv["finished"] and inv["ok"] == 6 and "git_revision" in inv
    assert inv["threads"]["policy"] >= 1 and inv["threads"]["cores"] >= 1  # the thread policy


def test_failures_are_rows_and_a_rerun_retries_only_them(tmp_path):
    def flaky(prompt: str) -> str:
        if "report 2" in prompt:
            raise ConnectionError("server went away")
        return "The correct answer is (B)"

    counts = run_experiment(
        config(), tmp_path, llm=ScriptedChatModel(reply_fn=flaky), show_progress=False
    )
    assert counts["ok"] == 4 and counts["failed"] == 2  # every pair accounted for
    failed = [r for r in read_rows(tmp_path) if r["status"] == "failed"]
    assert {r["sample_id"] for r in failed} == {
        "v2-2"
    } and "ConnectionError: server went away" in failed[0]["error"]
    healthy = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (B)")
    again = run_experiment(config(), tmp_path, llm=healthy, show_progress=False)
    assert again["skipped"] == 4 and again["ok"] == 2 and len(healthy.calls) == 2
    latest = latest_rows(read_rows(tmp_path))
    assert len(latest) == 6 and all(r["status"] == "ok" for r in latest.values())


def test_unknown_strategy_fails_before_any_work():
    with pytest.raises(KeyError, match="Did you mean: rag"):
        RunConfig(benchmark="longbench_v2", strategies=("rga",))


def test_report_tables_and_plots(tmp_path):
    replies = {
        "report 1": "The correct answer is (A)",
        "report 2": "The correct answer is (C)",
        "report 3": "nonsense",
    }

    def reply(prompt: str) -> str:
        return next(v for k, v in replies.items() if k in prompt)

    run_experiment(config(), tmp_path, llm=ScriptedChatModel(reply_fn=reply), show_progress=False)
    result = build_report(tmp_path)
    report = tmp_path / "report"
    summary = {r["strategy"]: r for r in result["summary"]}
    gold = {s.sample_id: s.answers[0] for s in v2_samples()}
    expected = round(100 * sum([gold["v2-1"] == "A", gold["v2-2"] == "C"]) / 3, 1)
    assert (
        summary["rag"]["score"] == expected
        and summary["rag"]["answers"] == 3
        and summary["rag"]["llm_calls"] == 1
    )
    assert (report / "summary.md").read_text().startswith("| strategy | score |")
    assert (report / "summary.csv").exists() and (report / "by_length.csv").exists()
    assert json.loads((report / "scores.json").read_text())["rag"]["benchmark"] == "longbench_v2"
    assert (report / "accuracy_vs_tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (report / "accuracy_vs_length.png").exists()  # one length bucket: no trend to draw
    assert result["by_length"][0]["length"] == length_bucket(13)


@pytest.mark.parametrize(
    "tokens,label",
    [
        (0, "<32K"),
        (128_000, "32K-160K"),
        (1_000_000, "160K-1.5M"),
        (4_000_000, "1.5M-6M"),
        (10_000_000, "6M+"),
    ],
)
def test_length_buckets_hold_the_corpusqa_tiers(tokens, label):
    assert length_bucket(tokens) == label


def test_llm_cache_replays_a_rerun_at_no_cost(tmp_path):
    with stub_server(latency=0.0) as url:
        os.environ["OPENAI_BASE_URL"] = url
        try:
            cfg = config(llm="openai:stub", llm_cache=True, strategies=("rag",))
            run_experiment(cfg, tmp_path, show_progress=False)
            first = {r["sample_id"]: r for r in read_rows(tmp_path)}
            (tmp_path / "results.jsonl").unlink()
            run_experiment(cfg, tmp_path, show_progress=False)
        finally:
            del os.environ["OPENAI_BASE_URL"]
    second = {r["sample_id"]: r for r in read_rows(tmp_path)}
    assert all(second[k]["prediction"] == first[k]["prediction"] for k in first)
    assert all(
        r["usage"]["cached_calls"] == 1 and r["usage"]["llm_calls"] == 0 for r in second.values()
    )
    assert all(r["usage"]["prompt_tokens"] == 0 for r in second.values())


def _run_cli(out: Path, url: str, extra_env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": url, **(extra_env or {})}
    cmd = [sys.executable, "-m", "longctx.experiments.cli", *_cli_args(out)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _cli_args(out: Path) -> list[str]:
    args = [
        "run",
        "--benchmark",
        "longbench_v2",
        "--data",
        V2,
        "--strategies",
        "rag,full_context",
        "--llm",
        "openai:stub",
    ]
    return args + ["--concurrency", "1", "--no-llm-cache", "--out", str(out)]


def _run_cli_in_process(out: Path, url: str, monkeypatch, extra_env: dict | None = None) -> int:
    """The same command as ``_run_cli``, in this process: the subprocess start (~3 s of imports) is
    not the point."""
    from longctx.experiments.cli.app import main

    with monkeypatch.context() as m:
        for k, v in {"OPENAI_BASE_URL": url, **(extra_env or {})}.items():
            m.setenv(k, v)
        return main(_cli_args(out))


def _predictions(out: Path) -> dict:
    return {k: (r["status"], r.get("prediction")) for k, r in latest_rows(read_rows(out)).items()}


def test_killed_run_resumes_to_the_same_rows_as_an_uninterrupted_one(tmp_path, monkeypatch, capsys):
    """Only the killed run is a process of its own (SIGKILL is the point); the others
    run in-process."""
    with stub_server(latency=0.4) as url:
        assert _run_cli_in_process(tmp_path / "whole", url, monkeypatch) == 0
        killed = _run_cli(tmp_path / "killed", url)
        deadline = time.monotonic() + 60
        while len(read_rows(tmp_path / "killed")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        partial = len(read_rows(tmp_path / "killed"))
        assert 2 <= partial < 6
        capsys.readouterr()
        assert _run_cli_in_process(tmp_path / "killed", url, monkeypatch) == 0
        out = capsys.readouterr().out
    assert f"{partial} already done" in out
    assert _predictions(tmp_path / "killed") == _predictions(tmp_path / "whole")
    assert len(read_rows(tmp_path / "killed")) == 6  # nothing answered twice


def test_faults_are_survived_and_accounted_for(tmp_path, monkeypatch):
    """500, 429 + Retry-After, timeouts and malformed JSON: every pair ends as a row;
    reruns finish."""
    env = {"LONGCTX_MAX_RETRIES": "0", "LONGCTX_TIMEOUT": "1"}
    with stub_server(latency=0.0, fail_every=2, hang_seconds=3) as url:
        _run_cli_in_process(tmp_path, url, monkeypatch, env)
        rows = read_rows(tmp_path)
        assert len(rows) == 6  # answered or failed with a reason, none dropped
        errors = [r["error"] for r in rows if r["status"] == "failed"]
        assert errors and all(e for e in errors)
        for _ in range(6):  # each rerun retries only the failed pairs
            if all(r["status"] == "ok" for r in latest_rows(read_rows(tmp_path)).values()):
                break
            _run_cli_in_process(tmp_path, url, monkeypatch, env)
    latest = latest_rows(read_rows(tmp_path))
    assert len(latest) == 6 and all(r["status"] == "ok" for r in latest.values())
    kinds = " ".join(errors)
    assert any(
        word in kinds
        for word in (
            "InternalServerError",
            "RateLimitError",
            "APITimeoutError",
            "ChatModelError",
            "JSON",
        )
    )
