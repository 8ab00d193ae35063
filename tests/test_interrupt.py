"""Ctrl-C stops ``longctx run`` (#31 item 1): a real subprocess, a real SIGINT, a stub server mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from experiments.perf.stub_server import stub_server
from experiments.runner import read_rows

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = 24


def _questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.csv"
    path.write_text("id,question\n" + "".join(f"q{i},What is fact number {i}?\n" for i in range(QUESTIONS)))
    return path


def _start(tmp_path: Path, url: str, concurrency: int = 2) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x", "LONGCTX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "experiments.cli", "run", "--corpus", str(ROOT / "examples" / "corpus"), "--questions", str(_questions(tmp_path)),
           "--strategies", "rag", "--llm", "openai:stub", "--no-llm-cache", "--concurrency", str(concurrency), "--out", str(tmp_path / "run")]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_rows(proc: subprocess.Popen, out: Path, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(read_rows(out)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run wrote no rows"
        time.sleep(0.05)


def _chat_requests(url: str) -> int:
    with urllib.request.urlopen(f"{url}/stats", timeout=5) as r:
        return json.load(r)["chat_requests"]


def _stop(proc: subprocess.Popen, *, times: int = 1) -> tuple[int, str, float]:
    sent = time.monotonic()
    for _ in range(times):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop within 30 s of SIGINT")
    return proc.returncode, err, time.monotonic() - sent


@pytest.mark.slow
def test_sigint_stops_the_run_and_the_rerun_resumes_it(tmp_path):
    out = tmp_path / "run"
    with stub_server(latency=0.4, reply_tokens=5) as url:
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 3)
        code, err, took = _stop(proc)
        assert code == 130, err
        assert took < 5, f"took {took:.1f}s to stop"
        assert "Traceback" not in err
        assert "rerun the same command to resume" in err
        rows = read_rows(out)
        done = {r["sample_id"] for r in rows}
        assert all(r["status"] == "ok" for r in rows) and len(done) == len(rows) < QUESTIONS
        invocation = json.loads((out / "manifest.json").read_text())["invocations"][-1]
        assert invocation["interrupted"] == QUESTIONS - len(rows) and "finished" in invocation
        before = _chat_requests(url)

        rerun = _start(tmp_path, url)
        stdout, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        assert f"{len(rows)} already done" in stdout
        assert _chat_requests(url) - before == QUESTIONS - len(rows)  # rag: one call per question not done yet
    rows = read_rows(out)
    assert len(rows) == QUESTIONS == len({r["sample_id"] for r in rows}) and all(r["status"] == "ok" for r in rows)


@pytest.mark.slow
def test_calls_in_flight_do_not_hold_the_exit_and_a_second_sigint_exits_at_once(tmp_path):
    out = tmp_path / "run"
    with stub_server(latency=1.0, reply_tokens=5) as url:
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 2)
        time.sleep(0.3)  # the next calls are in flight
        code, err, took = _stop(proc, times=2)
        assert code == 130 and took < 2, (took, err)
        assert "exiting now" in err and "Traceback" not in err

        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, len(read_rows(out)) + 1)
        code, err, took = _stop(proc)  # once: 1 s calls outlast no grace, but the exit does not wait for threads
        assert code == 130 and took < 5, (took, err)
