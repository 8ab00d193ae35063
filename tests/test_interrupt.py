"""Ctrl-C stops ``longctx run`` (#31 item 1): a real subprocess, a real SIGINT, a stub server mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
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


def _start(tmp_path: Path, url: str, concurrency: int = 2, strategies: str = "rag", options: list[str] | None = None) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x", "LONGCTX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "experiments.cli", "run", "--corpus", str(ROOT / "examples" / "corpus"), "--questions", str(_questions(tmp_path)),
           "--strategies", strategies, "--llm", "openai:stub", "--no-llm-cache", "--concurrency", str(concurrency), "--out", str(tmp_path / "run"),
           *(options or [])]
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
    """SIGINT ``proc`` (a second time once it says it is stopping); its exit status, stderr and
    the seconds from the first signal to its exit."""
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")), daemon=True)
    reader.start()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    if times == 2:
        while "Stopping:" not in "".join(err) and proc.poll() is None and time.monotonic() - sent < 30:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop within 30 s of SIGINT")
    took = time.monotonic() - sent
    reader.join(timeout=10)
    return proc.returncode, "".join(err), took


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
        time.sleep(0.5)  # a request sent just before the exit is counted by the stub
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
    with stub_server(latency=4.0, reply_tokens=5) as url:  # calls outlast the 2 s the run waits for them
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 2)
        code, err, took = _stop(proc, times=2)  # the second while the first waits for the calls in flight
        assert code == 130 and took < 5, (took, err)  # without the grace wait for the calls in flight
        assert "exiting now" in err and "Traceback" not in err

        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, len(read_rows(out)) + 1)
        code, err, took = _stop(proc)  # once: the run waits 2 s, then exits without the calls still in flight
        assert code == 130 and took < 5, (took, err)
        assert "rerun the same command to resume" in err and "exiting now" not in err


@pytest.mark.slow
def test_sigint_prints_no_callback_warning_for_the_calls_it_refuses(tmp_path):
    """MemAgent's next chunk starts calls after Ctrl-C: the guard refuses each, and LangChain's
    "Error in CancelGuard.on_chat_model_start callback: RunCancelled" warning is not printed for them."""
    with stub_server(latency=1.0, reply_tokens=5) as url:
        proc = _start(tmp_path, url, strategies="memagent", options=["--option", "memagent.chunk_tokens=200", "-y"])
        deadline = time.monotonic() + 120
        while _chat_requests(url) == 0:  # the first chunk's calls are in flight: the next chunk's come after the signal
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no call"
            time.sleep(0.05)
        code, err, _ = _stop(proc)
    assert code == 130, err
    assert "rerun the same command to resume" in err
    assert "RunCancelled" not in err and "Error in" not in err, err
