"""Runs you can trust: torn result tails, one run per folder, manifest updates never lost."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.stub_server import stub_server
from longctx.experiments.runner import (
    RESULTS_FILE,
    RunFolderLocked,
    latest_rows,
    read_rows,
    run_experiment,
)
from tests.scripted import ScriptedChatModel
from tests.test_runner import _run_cli, config

ROOT = Path(__file__).resolve().parent.parent


def test_a_torn_last_line_does_not_swallow_the_next_row(tmp_path):
    def flaky(prompt: str) -> str:
        if "report 2" in prompt:
            raise ConnectionError("server went away")
        return "The correct answer is (B)"

    run_experiment(config(), tmp_path, llm=ScriptedChatModel(reply_fn=flaky), show_progress=False)
    with open(tmp_path / RESULTS_FILE, "a", encoding="utf-8") as f:
        f.write('{"sample_id": "v2-2", "strategy": "rag", "sta')  # a kill mid-write
    assert len(read_rows(tmp_path)) == 6  # the torn line is ignored when reading
    again = run_experiment(
        config(),
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (B)"),
        show_progress=False,
    )
    assert again["ok"] == 2
    rows = read_rows(tmp_path)
    assert len(rows) == 8  # both retried rows were kept
    assert all(r["status"] == "ok" for r in latest_rows(rows).values())
    assert (tmp_path / RESULTS_FILE).read_bytes().endswith(b"}\n")
    assert b'"sta{' not in (tmp_path / RESULTS_FILE).read_bytes()


def _wait_for(predicate, proc, what: str) -> None:
    deadline = time.monotonic() + 90
    while not predicate():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: process ended with {proc.poll()}: "
                f"{proc.stderr.read() if proc.stderr else ''}"
            )
        time.sleep(0.05)


@pytest.mark.slow  # two CLI processes against a 2 s-latency stub: ~15 s on 2 cores
def test_a_second_run_on_the_same_folder_is_refused_naming_the_holder(tmp_path):
    with stub_server(
        latency=2.0
    ) as url:  # slow enough that the first run still holds the folder under load
        first = _run_cli(tmp_path, url)
        _wait_for(lambda: len(read_rows(tmp_path)) >= 1, first, "first run")
        with pytest.raises(RunFolderLocked) as info:
            run_experiment(
                config(),
                tmp_path,
                llm=ScriptedChatModel(reply_fn=lambda p: "x"),
                show_progress=False,
            )
        message = str(info.value)
        assert (
            f"pid {first.pid}" in message
            and os.uname().nodename in message
            and "started" in message
        )
        second = _run_cli(tmp_path, url)  # the command line says the same, with no traceback
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and f"pid {first.pid}" in err and "Traceback" not in err
        assert first.wait(timeout=120) == 0
    rows = read_rows(tmp_path)
    assert len(rows) == 6 and len(latest_rows(rows)) == 6  # nothing done twice


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path):
    code = (
        "import sys\nfrom longctx.experiments.runner.folder import run_lock\n"
        "with run_lock(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(RunFolderLocked, match=f"pid {holder.pid}"):
        run_experiment(
            config(), tmp_path, llm=ScriptedChatModel(reply_fn=lambda p: "x"), show_progress=False
        )
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    counts = run_experiment(
        config(),
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)"),
        show_progress=False,
    )
    assert counts["ok"] == 6


RACER = """
import sys
from longctx.experiments.runner.manifest import finish_manifest, start_manifest
from tests.scripted import ScriptedChatModel
from tests.test_runner import config
from pathlib import Path
out = Path(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()  # start together
for i in range(int(sys.argv[2])):
    n = start_manifest(out, config(), ScriptedChatModel(), 3, 6)
    finish_manifest(out, n, {"ok": i, "who": sys.argv[3]})
"""


def test_racing_manifest_updates_are_all_recorded(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path), "12", str(w)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(2)
    ]
    assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    invocations = json.loads((tmp_path / "manifest.json").read_text())["invocations"]
    assert len(invocations) == 24
    assert all("finished" in inv for inv in invocations)  # every start got its own finish
    assert sorted((inv["who"], inv["ok"]) for inv in invocations) == sorted(
        (str(w), i) for w in range(2) for i in range(12)
    )
