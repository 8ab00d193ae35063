"""Time estimates from measurement (#31 item 2): the embedded model's speed measured once per
machine and cached, plans at that speed, and a confirmation asked only on a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.stub_server import stub_server
from longctx.agents import calibration
from longctx.agents.calibration import (
    ModelSpeed,
    calibration_key,
    calibration_path,
    model_speed,
    needs_remeasuring,
)
from longctx.agents.chat_models import EmbeddedChatModel
from longctx.agents.run_plan import estimate, plan_for, too_slow
from longctx.experiments.cli.app import main
from longctx.graphs import STRATEGIES
from tests.scripted import ScriptedChatModel
from tests.virtual_clock import VirtualClock, virtual_clock

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _slow_model(clock: VirtualClock, seconds_per_call: float = 0.05) -> ScriptedChatModel:
    def reply(prompt: str) -> str:
        clock.advance(seconds_per_call)
        return "one, two, three"

    return ScriptedChatModel(reply_fn=reply)


def test_the_calibration_is_measured_once_and_then_read_from_the_cache(tmp_path, monkeypatch):
    chat = _slow_model(virtual_clock(monkeypatch, calibration))
    first = model_speed(chat, cache_dir=tmp_path)
    calls = len(chat.calls)
    assert calls == 5  # a warm-up, three prefill calls and the generation call
    prompt_tokens = {
        len(c["prompt"].split()) for c in chat.calls[1:4]
    }  # the scripted model counts words as tokens
    assert len(prompt_tokens) == 1 and first.prompt_tokens_per_second == round(
        prompt_tokens.pop() / 0.05, 1
    )
    assert first.completion_tokens_per_second == round(
        len("one, two, three".split()) / 0.05, 1
    )  # 0.05 s a call, on the virtual clock
    again = model_speed(chat, cache_dir=tmp_path)
    assert len(chat.calls) == calls and again == first  # no call: read back
    stored = json.loads((tmp_path / "calibration.json").read_text())
    assert stored[calibration_key(chat)]["measured"] == first.measured
    model_speed(chat, cache_dir=tmp_path, refresh=True)
    assert len(chat.calls) == calls + 5


@pytest.mark.e2e
@pytest.mark.slow
def test_the_embedded_model_is_measured_on_this_machine_once(tmp_path):
    chat = EmbeddedChatModel()
    speed = model_speed(chat, cache_dir=tmp_path)
    assert (
        speed.prompt_tokens_per_second > speed.completion_tokens_per_second > 0
    )  # prefill is batched, generation is not
    assert (
        model_speed(EmbeddedChatModel(), cache_dir=tmp_path) == speed
    )  # read back: the same measurement


def test_the_calibration_is_kept_per_model_settings_and_cpu():
    key = calibration_key(EmbeddedChatModel())
    model, settings, cpu = key.split("|")
    assert model.startswith("SmolLM2") and model.endswith(
        f":{Path(EmbeddedChatModel()._resolved).stat().st_size}"
    )
    assert (
        "n_threads=None" in settings
        and "flash_attn=True" in settings
        and cpu.endswith(f"x{os.cpu_count()}")
    )
    # every setting that changes the model's speed is a different calibration
    others = {
        calibration_key(EmbeddedChatModel(**change))
        for change in (
            {"n_threads": 1},
            {"flash_attn": False},
            {"n_batch": 2048},
            {"n_ubatch": 256},
        )
    }
    assert key not in others and len(others) == 4


@pytest.mark.parametrize(
    ("measured_at", "now", "again"),
    [
        (None, 0.0, False),
        (0.2, 0.0, False),
        (1.0, 0.49, True),
        (3.0, 0.1, True),
        (3.0, 0.5, False),
        (3.0, None, False),
        (0.99, 0.0, False),
    ],
)
def test_a_figure_measured_busy_is_measured_again_once_the_machine_is_quiet(
    measured_at, now, again
):
    speed = ModelSpeed(
        prompt_tokens_per_second=50.0,
        completion_tokens_per_second=5.0,
        measured="t",
        key="k",
        load_average=measured_at,
    )
    assert needs_remeasuring(speed, now) is again


def test_the_calibration_records_its_load_and_remeasures_a_busy_figure_when_quiet(
    tmp_path, monkeypatch
):
    chat = _slow_model(virtual_clock(monkeypatch, calibration))
    monkeypatch.setattr(
        calibration, "load_per_core", lambda: 2.5
    )  # the OS's figure, not a model part
    busy = model_speed(chat, cache_dir=tmp_path)
    assert busy.load_average == 2.5 and "load 2.5 per core (a busy machine" in busy.conditions()
    calls = len(chat.calls)
    model_speed(chat, cache_dir=tmp_path)
    assert len(chat.calls) == calls  # still busy: the cached figure
    monkeypatch.setattr(calibration, "load_per_core", lambda: 0.1)
    quiet = model_speed(chat, cache_dir=tmp_path)
    assert (
        len(chat.calls) == calls + 5
        and quiet.load_average == 0.1
        and "busy" not in quiet.conditions()
    )
    assert model_speed(chat, cache_dir=tmp_path) == quiet  # quiet figures are kept
    old = ModelSpeed(
        prompt_tokens_per_second=1.0,
        completion_tokens_per_second=1.0,
        measured="2026-01-01T00:00:00",
        key="k",
    )
    assert (
        old.conditions() == "2026-01-01T00:00:00"
    )  # a calibration from before the load was recorded


def test_the_plan_uses_the_measured_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGCTX_CALIBRATION", str(tmp_path / "calibration.json"))
    chat = EmbeddedChatModel()
    measured = ModelSpeed(
        prompt_tokens_per_second=50.0,
        completion_tokens_per_second=5.0,
        measured="2026-01-01T00:00:00",
        key=calibration_key(chat),
    )
    calibration_path().write_text(json.dumps({measured.key: measured.__dict__}))
    cfg = STRATEGIES.get("memagent").make_config(chunk_tokens=500, max_new_tokens=96)
    (plan,), speed = plan_for({"memagent": cfg}, [(1_000, 5, 4)], chat, calibrate=True)
    assert speed == measured
    assert plan.calls == 4 * 3  # two chunks and the answer per question
    assert plan.seconds == pytest.approx(plan.prompt_tokens / 50 + plan.completion_tokens / 5)
    faster = ModelSpeed(
        prompt_tokens_per_second=500.0, completion_tokens_per_second=50.0, measured="x", key="k"
    )
    assert plan_for({"memagent": cfg}, [(1_000, 5, 4)], chat, speed=faster)[0][
        0
    ].seconds == pytest.approx(plan.seconds / 10)


@pytest.mark.parametrize(
    ("strategy", "options", "calls", "reads_at_least"),
    [
        ("rag", {}, 1, 7 * 200),  # LongBench v1: 7 chunks of 200 words
        ("full_context", {}, 1, 7_000),  # the embedded model's 8K window, less the reply
        ("memagent", {}, 21, 100_000),  # 20 chunks of 5,000 tokens and the answer
        ("structured", {}, 1 + 20 + 2, 100_000),  # plan, a window per document, SQL and answer
    ],
)
def test_plans_follow_the_configs(strategy, options, calls, reads_at_least):
    cfg = STRATEGIES.get(strategy).make_config(**options)
    plan = estimate(strategy, cfg, corpus_tokens=100_000, documents=20, questions=1, window=8192)
    assert plan.calls == calls and plan.prompt_tokens >= reads_at_least and plan.seconds is None


def test_no_calibration_where_no_plan_could_be_slow():
    cfg = STRATEGIES.get("rag").make_config()
    plans, speed = plan_for(
        {"rag": cfg}, [(800, 5, 4)], EmbeddedChatModel.model_construct()
    )  # a model that cannot run
    assert speed is None and plans[0].seconds is None and not too_slow(plans)


def _ask(stdin_is_tty: bool) -> tuple[str, str]:
    """Run ``confirm`` in a child whose stdin is a real terminal (a pty) or a pipe; answer 'y'."""
    code = (
        "from longctx.agents.run_plan import confirm; print('GO' if confirm('a long run', "
        "yes=False) else 'STOP')"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not stdin_is_tty:
        out = subprocess.run(
            [sys.executable, "-c", code],
            input="n\n",
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        return out.stdout, out.stderr
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    os.close(terminal)
    os.write(controller, b"y\n")
    out, err = proc.communicate(timeout=120)
    os.close(controller)
    return out, err


def test_the_question_is_asked_only_on_a_terminal():
    out, err = _ask(stdin_is_tty=True)
    assert "Go on? [y/N]" in err and out.strip() == "GO"
    out, err = _ask(stdin_is_tty=False)
    assert (
        "a long run" in err and "Go on?" not in err and out.strip() == "GO"
    )  # a pipe is never asked: the run goes on


def test_yes_and_a_pipe_skip_the_question_and_a_terminal_no_declines():
    from longctx.agents.run_plan import confirm

    class Terminal:
        def __init__(self, reply: str) -> None:
            self.reply = reply

        def isatty(self) -> bool:
            return True

        def readline(self) -> str:
            return self.reply

    err = io.StringIO()
    assert (
        confirm("slow", yes=True, stdin=Terminal("n\n"), out=err) and "Go on" not in err.getvalue()
    )
    assert not confirm("slow", stdin=Terminal("\n"), out=err) and "Go on" in err.getvalue()
    assert confirm("slow", stdin=Terminal("y\n"), out=err)


def test_a_plan_over_the_threshold_warns_with_minutes_and_the_speed():
    from longctx.agents.run_plan import StrategyPlan, announce_plan

    speed = ModelSpeed(
        prompt_tokens_per_second=50.0,
        completion_tokens_per_second=5.0,
        measured="2026-01-01T00:00:00",
        key="k",
    )
    err = io.StringIO()
    quick = [StrategyPlan("rag", 4, 4, 2_000, 100, 60.0)]
    assert announce_plan(quick, speed, "SmolLM2", out=err) and "Warning" not in err.getvalue()
    slow = [StrategyPlan("memagent", 4, 400, 200_000, 40_000, 12_000.0)]
    assert announce_plan(slow, speed, "SmolLM2", yes=True, out=err)
    text = err.getvalue()
    assert (
        "memagent: 4 question(s), ~400 calls, ~200,000 prompt + ~40,000 completion tokens, about "
        "3.3 h" in text
    )
    assert (
        "Warning: that is over 15 minutes" in text
        and "50 prompt and 5 completion tokens/s (measured on this machine" in text
    )


def test_run_prints_its_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with stub_server(latency=0.0, reply_tokens=5) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        args = [
            "run",
            "--corpus",
            str(EXAMPLES / "corpus"),
            "--questions",
            str(EXAMPLES / "questions.csv"),
            "--strategies",
            "rag,memagent",
            "--llm",
            "openai:stub",
            "--limit",
            "2",
            "--option",
            "memagent.chunk_tokens=500",
            "--out",
            str(tmp_path / "run"),
        ]
        assert main(args) == 0
    err = capsys.readouterr().err
    assert (
        "Plan on stub @ " in err
        and "rag: 2 question(s), ~2 calls" in err
        and "memagent: 2 question(s), ~6 calls" in err
    )
    assert (
        "Warning" not in err and " min" not in err
    )  # a served model's speed is not measured: no minutes, no warning


def test_the_run_bar_shows_the_calls_and_the_step_of_a_long_answer(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with stub_server(latency=0.0, reply_tokens=5, tools=True, properties=1) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        args = [
            "run",
            "--corpus",
            str(EXAMPLES / "corpus"),
            "--questions",
            str(EXAMPLES / "questions.csv"),
            "--strategies",
            "memagent,structured",
            "--llm",
            "openai:stub",
            "--limit",
            "1",
            "--concurrency",
            "1",
            "--option",
            "memagent.chunk_tokens=300",
            "--out",
            str(tmp_path / "run"),
        ]
        assert main(args) == 0
    err = capsys.readouterr().err
    assert "memagent/update_memory" in err  # the inner step, posted while MemAgent reads its chunks
    assert "structured/" in err
    assert "tokens read at" in err and "calls " in err
