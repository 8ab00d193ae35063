"""MemAgent checkpoints you can trust: one database per run key, corruption contained,
finished runs pruned, a run key locked by the process running it."""

import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from longctx import answer, answer_many
from longctx.memory import CHECKPOINTS_FILE, TRACE_FILE, RunInUse
from longctx.memory.checkpoints import checkpoint_rows
from tests.test_memagent import Crash, corpus_of, crashing_model, echo_model, stream_tokens

ROOT = Path(__file__).resolve().parent.parent


def run_dirs(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "memagent").iterdir() if p.is_dir())


def test_each_run_key_has_its_own_databases(isolated_cache):
    corpus = corpus_of([6000])
    answer(corpus, "first question", strategy="memagent", llm=echo_model(), show_progress=False)
    answer(corpus, "second question", strategy="memagent", llm=echo_model(), show_progress=False)
    dirs = run_dirs(isolated_cache)
    assert len(dirs) == 2
    for d in dirs:
        assert (d / CHECKPOINTS_FILE).is_file() and (d / TRACE_FILE).is_file()
    assert not (
        isolated_cache / "memagent" / CHECKPOINTS_FILE
    ).exists()  # no shared database any more


@pytest.mark.parametrize("damage", ["not_sqlite", "truncated"])
def test_a_corrupt_checkpoint_database_restarts_only_its_run(isolated_cache, damage, caplog):
    corpus = corpus_of([26000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    answer(corpus, "other question", strategy="memagent", llm=echo_model(), show_progress=False)
    (other,) = run_dirs(isolated_cache)
    with pytest.raises(Crash):  # an interrupted run with a few steps on disk
        answer(
            corpus, "q", strategy="memagent", llm=crashing_model(crash_at=4), show_progress=False
        )
    (victim,) = [d for d in run_dirs(isolated_cache) if d != other]
    db = victim / CHECKPOINTS_FILE
    if damage == "not_sqlite":
        db.write_bytes(b"this is not a database " * 200)
    else:
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2])
        (victim / (CHECKPOINTS_FILE + "-wal")).unlink(missing_ok=True)
    caplog.set_level(logging.WARNING)
    model = echo_model()
    result = answer(corpus, "q", strategy="memagent", llm=model, show_progress=False)
    assert (
        len(model.calls) == n + 1 and result.answer == "42"
    )  # that stream restarted from the start
    assert any(str(db) in r.getMessage() and "corrupt" in r.getMessage() for r in caplog.records)
    assert list(victim.glob(CHECKPOINTS_FILE + ".corrupt-*"))
    untouched = echo_model()
    answer(corpus, "other question", strategy="memagent", llm=untouched, show_progress=False)
    assert untouched.calls == []  # the other run kept its checkpoint: replayed


def test_a_corrupt_trace_never_aborts_the_run(isolated_cache, caplog):
    corpus = corpus_of([12000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    with pytest.raises(Crash):
        answer(
            corpus, "q", strategy="memagent", llm=crashing_model(crash_at=2), show_progress=False
        )
    (run,) = run_dirs(isolated_cache)
    (run / TRACE_FILE).write_bytes(b"garbage " * 500)
    (run / (TRACE_FILE + "-wal")).unlink(missing_ok=True)
    caplog.set_level(logging.WARNING)
    result = answer(corpus, "q", strategy="memagent", llm=echo_model(), show_progress=False)
    assert result.answer == "42" and result.usage.run_llm_calls == n + 1
    assert any(str(run / TRACE_FILE) in r.getMessage() for r in caplog.records)


def test_an_unopenable_trace_degrades_to_no_trace(isolated_cache, caplog):
    corpus = corpus_of([6000])
    with pytest.raises(Crash):
        answer(
            corpus, "q", strategy="memagent", llm=crashing_model(crash_at=1), show_progress=False
        )
    (run,) = run_dirs(isolated_cache)
    (run / TRACE_FILE).unlink()
    (run / TRACE_FILE).symlink_to(
        run / "missing" / "trace.sqlite"
    )  # cannot be opened as a database at all
    caplog.set_level(logging.WARNING)
    result = answer(corpus, "q", strategy="memagent", llm=echo_model(), show_progress=False)
    assert result.answer == "42" and not [s for s in result.steps if s["node"] == "update_memory"]
    assert any("continuing without the per-step trace" in r.getMessage() for r in caplog.records)


def test_a_finished_run_keeps_only_its_final_checkpoint(isolated_cache):
    corpus = corpus_of([61000])  # 21 chunks of 5000 tokens, 32 questions (the case)
    questions = [f"question {i}" for i in range(32)]
    first = answer_many(
        corpus, questions, strategy="memagent", llm=echo_model(), show_progress=False
    )
    (run,) = run_dirs(isolated_cache)
    db = run / CHECKPOINTS_FILE
    assert checkpoint_rows(db) == 1
    size = db.stat().st_size + sum(p.stat().st_size for p in run.glob(CHECKPOINTS_FILE + "-*"))
    print(
        "\ncheckpoint storage after a finished 32-question x "
        f"{math.ceil(stream_tokens(corpus) / 5000)}-chunk run: {size} bytes"
    )
    assert size < 1_000_000
    again = echo_model()
    replayed = answer_many(corpus, questions, strategy="memagent", llm=again, show_progress=False)
    assert again.calls == [] and [a.answer for a in replayed] == [a.answer for a in first]
    assert [s for s in replayed[5].steps if s["node"] == "update_memory"] == [
        s for s in first[5].steps if s["node"] == "update_memory"
    ]


HOLDER = textwrap.dedent(
    """
    import sys
    from longctx import answer
    from tests.scripted import ScriptedChatModel
    from tests.test_memagent import corpus_of
    started = []
    def reply(prompt):
        if not started:
            started.append(True)
            print("started", flush=True)
            sys.stdin.readline()  # held until the test says go
        return "Therefore, the answer is 42." if prompt.endswith("Your answer:\\n") else "mem"
    llm = ScriptedChatModel(reply_fn=reply)
    r = answer(corpus_of([12000]), "q", strategy="memagent", llm=llm, show_progress=False)
    print(r.answer, r.usage.llm_calls, flush=True)
    """
)


def test_a_second_identical_run_is_refused_naming_the_holder(tmp_path, isolated_cache):
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(isolated_cache), "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "started"
        model = echo_model()
        with pytest.raises(RunInUse, match=f"pid {holder.pid}") as info:
            answer(corpus_of([12000]), "q", strategy="memagent", llm=model, show_progress=False)
        assert model.calls == [] and os.uname().nodename in str(info.value)
    finally:
        out, _ = holder.communicate("go\n", timeout=120)
    assert holder.returncode == 0 and out.split()[0] == "42"
    replay = echo_model()
    assert (
        answer(corpus_of([12000]), "q", strategy="memagent", llm=replay, show_progress=False).answer
        == "42"
    )
    assert replay.calls == []  # after the holder finished: replayed from its checkpoint


def test_a_killed_run_resumes_in_its_own_folder_and_is_pruned(tmp_path):
    script = textwrap.dedent(
        """
        import os, signal, sys
        from longctx import answer
        from tests.scripted import ScriptedChatModel
        from tests.test_memagent import corpus_of
        kill_at, calls = int(sys.argv[1]), []
        def reply(prompt):
            calls.append(prompt)
            if len(calls) == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if prompt.endswith("Your answer:\\n"):
                return "Therefore, the answer is 42."
            return "mem " + str(len(calls))
        llm = ScriptedChatModel(reply_fn=reply)
        r = answer(corpus_of([26000]), "q", strategy="memagent", llm=llm, show_progress=False)
        print(r.usage.run_llm_calls, r.answer, len(calls), r.usage.llm_calls)
        """
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        [sys.executable, "-c", script, "4"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert killed.returncode == -signal.SIGKILL
    (run,) = run_dirs(cache)
    assert checkpoint_rows(run / CHECKPOINTS_FILE) > 1  # the interrupted run's steps are on disk
    done = subprocess.run(
        [sys.executable, "-c", script, "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    n = math.ceil(stream_tokens(corpus_of([26000])) / 5000)
    assert done.stdout.split() == [
        str(n + 1),
        "42",
        str(n + 1 - 3),
        str(n + 1 - 3),
    ]  # resumed after the 3 finished calls (lock taken over)
    assert checkpoint_rows(run / CHECKPOINTS_FILE) == 1
