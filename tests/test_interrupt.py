"""Ctrl-C stops ``longctx run`` (#31 item 1): a real subprocess, a real SIGINT, a stub
server mid-run."""

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

from benchmarks.stub_server import stub_server
from longctx.experiments.runner import read_rows

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = 24


def _questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.csv"
    path.write_text(
        "id,question\n" + "".join(f"q{i},What is fact number {i}?\n" for i in range(QUESTIONS))
    )
    return path


def _start(
    tmp_path: Path,
    url: str,
    concurrency: int = 2,
    strategies: str = "rag",
    options: list[str] | None = None,
) -> subprocess.Popen:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": url,
        "OPENAI_API_KEY": "x",
        "LONGCTX_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [
        sys.executable,
        "-m",
        "longctx.experiments.cli",
        "run",
        "--corpus",
        str(ROOT / "examples" / "corpus"),
        "--questions",
        str(_questions(tmp_path)),
        "--strategies",
        strategies,
        "--llm",
        "openai:stub",
        "--no-llm-cache",
        "--concurrency",
        str(concurrency),
        "--out",
        str(tmp_path / "run"),
        *(options or []),
    ]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_rows(proc: subprocess.Popen, out: Path, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(read_rows(out)) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run wrote no rows"
        time.sleep(0.05)


def _chat_requests(url: str) -> int:
    with urllib.request.urlopen(f"{url}/stats", timeout=5) as r:
        return json.load(r)["chat_requests"]


def _stop(proc: subprocess.Popen, *, times: int = 1) -> tuple[int, str]:
    """SIGINT ``proc`` (a second time once it says it is stopping); its exit status and stderr.
    The 30 s waits only end a run that hangs: the calls a test holds at the stub take 300 s."""
    err: list[str] = []
    stopping = threading.Event()

    def read() -> None:
        for ch in iter(lambda: proc.stderr.read(1), ""):
            err.append(ch)
            if ch == "\n" and "Stopping:" in "".join(err):
                stopping.set()
        stopping.set()  # the run ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.send_signal(signal.SIGINT)
    if times == 2:
        assert stopping.wait(30), "the run never said it was stopping"
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop within 30 s of SIGINT")
    reader.join(timeout=10)
    return proc.returncode, "".join(err)


@pytest.mark.slow
def test_sigint_stops_the_run_and_the_rerun_resumes_it(tmp_path):
    out = tmp_path / "run"
    with stub_server(latency=0.4, reply_tokens=5) as url:
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 3)
        code, err = _stop(proc)
        assert code == 130, err
        assert "Traceback" not in err
        assert "rerun the same command to resume" in err
        rows = read_rows(out)
        done = {r["sample_id"] for r in rows}
        assert all(r["status"] == "ok" for r in rows) and len(done) == len(rows) < QUESTIONS
        invocation = json.loads((out / "manifest.json").read_text())["invocations"][-1]
        assert invocation["interrupted"] == QUESTIONS - len(rows) and "finished" in invocation
        rerun = _start(tmp_path, url)
        stdout, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        assert f"{len(rows)} already done" in stdout
    new = read_rows(out)[len(rows) :]
    assert (
        sum(r["usage"]["llm_calls"] for r in new) == len(new) == QUESTIONS - len(rows)
    )  # rag: one call per question not done yet
    rows = read_rows(out)
    assert len(rows) == QUESTIONS == len({r["sample_id"] for r in rows}) and all(
        r["status"] == "ok" for r in rows
    )


@pytest.mark.slow
def test_calls_in_flight_do_not_hold_the_exit_and_a_second_sigint_exits_at_once(tmp_path):
    """Every call after the first two is held at the stub for 300 s: a run that waited for its calls
    in flight would not exit within the 30 s ``_stop`` allows, however loaded the machine."""
    out = tmp_path / "run"
    with stub_server(latency=0.05, reply_tokens=5, hold_after=2, hang_seconds=300) as url:
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 2)
        code, err = _stop(proc, times=2)  # the second while the first waits for the calls in flight
        assert code == 130, err  # without the grace wait for the calls in flight
        assert "exiting now" in err and "Traceback" not in err
        assert (
            len(read_rows(out)) == 2 and _chat_requests(url) > 2
        )  # calls were in flight, and none finished

    with stub_server(latency=0.05, reply_tokens=5, hold_after=1, hang_seconds=300) as url:
        proc = _start(tmp_path, url)
        _wait_for_rows(proc, out, 3)
        code, err = _stop(
            proc
        )  # once: the run waits 2 s, then exits without the calls still in flight
        assert code == 130, err
        assert "rerun the same command to resume" in err and "exiting now" not in err
        assert len(read_rows(out)) == 3 and _chat_requests(url) > 1


@pytest.mark.slow
def test_sigint_prints_no_callback_warning_for_the_calls_it_refuses(tmp_path):
    """MemAgent's next chunk starts calls after Ctrl-C: the guard refuses each, and LangChain's
    "Error in CancelGuard.on_chat_model_start callback: RunCancelled" warning is not printed
    for them."""
    with stub_server(latency=1.0, reply_tokens=5) as url:
        proc = _start(
            tmp_path,
            url,
            strategies="memagent",
            options=["--option", "memagent.chunk_tokens=200", "-y"],
        )
        deadline = time.monotonic() + 120
        while (
            _chat_requests(url) == 0
        ):  # the first chunk's calls are in flight: the next chunk's come after the signal
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no call"
            time.sleep(0.05)
        code, err = _stop(proc)
    assert code == 130, err
    assert "rerun the same command to resume" in err
    assert "RunCancelled" not in err and "Error in" not in err, err
