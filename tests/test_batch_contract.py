"""The batch runner's contract: MemAgent's run keys are pinned (existing checkpoints must
still resume), and a second, toy batched strategy with its own names runs
through ``answer_many``."""

import asyncio
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from longctx import Budget, BudgetExceeded, Question, aanswer_many, answer_many
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import add_usage, complete_with_usage
from longctx.graphs.metering.budget import CostPlan
from longctx.graphs.plugin.config import StrategyConfig, option
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import BatchRun, BatchSettings
from longctx.graphs.runtime.run import run_strategy
from longctx.memory import MemoryTrace
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel
from tests.test_memagent import echo_model

PINNED_CORPUS = Corpus.from_texts(
    ["The vault code is 7421. " * 40, "The library is in Oulu. " * 30]
)


def _run_dirs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


@pytest.mark.parametrize(
    "options,key_prefix,key",
    [
        # changed twice: issue 35 (the key gained the model's request settings and tokenizer and the
        # window_cut option) and issue 50 (memory.checkpoints.CHECKPOINT_FORMAT 2: checkpoints of
        # the longctx namespace, whose state types are named longctx.retrieval...)
        ({}, None, "fb2efbac15014a174d82a549d33ecf6a"),
        (
            {
                "chunk_tokens": 400,
                "continue_from_prefix": True,
                "concurrency": 2,
                "trace_chars": 10,
            },
            None,
            "a7e876aedae78b028abdfd4c52ec4a29",
        ),
        (
            {"max_new_tokens": 64, "resume": True},
            "self_route>memagent",
            "2360590d47317c86c87564cb429e2a80",
        ),
    ],
)
def test_memagent_run_keys_are_pinned(tmp_path, options, key_prefix, key):
    """The key of a fixed input never changes: a checkpoint written before a refactor
    still resumes."""
    spec = STRATEGIES.get("memagent")
    questions = [
        Question(text="What is the vault code?"),
        Question(text="Where is the library?", instruction="Answer in one word."),
    ]
    run_strategy(
        spec,
        spec.make_config(**options),
        questions,
        llm=echo_model(),
        corpus=PINNED_CORPUS,
        cache_dir=tmp_path,
        key_prefix=key_prefix,
    )
    assert _run_dirs(tmp_path / "memagent") == [key]


# -- a second batched strategy with names of its own -------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TallyConfig(StrategyConfig):
    """Counts how often each question's word occurs, ``window_words`` words of the corpus a step."""

    window_words: int = option(4, min=1)
    reply_tokens: int = option(8, min=1)
    checkpointed: bool = True  # resume
    in_flight: int = option(2, min=1)  # concurrency
    kept_chars: int | None = None  # trace length


@dataclass(frozen=True)
class TallyContext(StrategyContext[TallyConfig]):
    windows: tuple[str, ...] = ()
    trace: MemoryTrace | None = None
    thread: str = ""


def _added(a: dict | None, b: dict | None) -> dict:
    a, b = a or {}, b or {}
    return {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}


class TallyState(TypedDict, total=False):
    words: list[str]
    n_windows: int
    window: int
    tallies: Annotated[dict[str, int], _added]
    usage: Annotated[dict[str, dict], add_usage]


def tally_context(
    ctx: StrategyContext[TallyConfig],
    *,
    trace: MemoryTrace,
    thread: str,
    questions: Sequence[Question],
) -> TallyContext:
    words = " ".join(d.text for d in ctx.corpus.documents).split()
    n = ctx.config.window_words
    windows = tuple(" ".join(words[i : i + n]) for i in range(0, len(words), n))
    return TallyContext(
        llm=ctx.llm,
        config=ctx.config,
        corpus=ctx.corpus,
        windows=windows,
        trace=trace,
        thread=thread,
    )


def tally_start(questions: list[Question], ctx: TallyContext) -> TallyState:
    return {
        "words": [q.text for q in questions],
        "n_windows": len(ctx.windows),
        "window": 0,
        "tallies": {str(i): 0 for i in range(len(questions))},
    }


def fan_out(state: TallyState) -> list[Send] | str:
    k = state["window"]
    if k == state["n_windows"]:
        return END
    return [
        Send("tally", {"qi": str(i), "word": w, "window": k, "so_far": state["tallies"][str(i)]})
        for i, w in enumerate(state["words"])
    ]


def tally(task: dict[str, Any], runtime: Runtime[TallyContext]) -> dict:
    ctx, qi, k = runtime.context, task["qi"], task["window"]
    reply, usage = complete_with_usage(
        ctx.llm, f"Count {task['word']!r} in: {ctx.windows[k]}", max_tokens=ctx.config.reply_tokens
    )
    if ctx.trace is not None:
        ctx.trace.record(
            ctx.thread, int(qi), k, f"{task['word']}: {task['so_far'] + int(reply)}", 1, False
        )
    return {"tallies": {qi: int(reply)}, "usage": {qi: usage}}


def next_window(state: TallyState) -> dict:
    return {"window": state["window"] + 1}


def tally_answer(state: TallyState, i: int) -> dict[str, Any]:
    total = str(state["tallies"][str(i)])
    return {
        "raw": total,
        "answer": total,
        "usage": state["usage"].get(str(i), {}) if "usage" in state else {},
        "final_step": {"word": state["words"][i]},
    }


def build_tally(config: TallyConfig | None = None, checkpointer: Any = None):
    graph = StateGraph(TallyState, context_schema=TallyContext)
    graph.add_node("tally", tally)  # type: ignore[arg-type, call-overload]
    graph.add_node("next_window", next_window)
    graph.add_conditional_edges(START, fan_out, ["tally", END])
    graph.add_edge("tally", "next_window")
    graph.add_conditional_edges("next_window", fan_out, ["tally", END])
    return graph.compile(checkpointer=checkpointer, name="tally")


TALLY_RUN = BatchRun(
    prepare_context=tally_context,
    initial_state=tally_start,
    collect=tally_answer,
    settings=lambda c: BatchSettings(
        resume=c.checkpointed,
        concurrency=c.in_flight,
        answer_budget=c.reply_tokens,
        trace_chars=c.kept_chars,
    ),
    step_sizes=lambda ctx: [len(w.split()) for w in ctx.windows],
    advance_node="next_window",
    progress_key="window",
    runtime_fields=("checkpointed", "in_flight", "kept_chars"),
    trace_step="tally",
)


def tally_plan(
    cfg: TallyConfig, corpus: Corpus, questions: Sequence[Question], llm: Any = None
) -> CostPlan:
    calls = len(questions) * -(
        -sum(len(d.text.split()) for d in corpus.documents) // cfg.window_words
    )
    return CostPlan(
        strategy="tally",
        questions=len(questions),
        calls=calls,
        max_calls=calls,
        prompt_tokens=10 * calls,
        max_prompt_tokens=10 * calls,
        completion_tokens=calls * cfg.reply_tokens,
        formula="one call per window and question",
    )


TALLY_CORPUS = Corpus.from_texts(
    ["the fox saw the dog and the fox ran", "a dog barked at the fox near the barn"]
)
WORDS = ["fox", "the"]
N_WINDOWS = 5  # 18 words, 4 a window; "fox" 3 times, "the" 5 times


@pytest.fixture
def tally_registered():
    """The toy strategy registered for one test (the registry restored afterwards)."""
    with STRATEGIES.scoped(
        "tally", build_tally, config_cls=TallyConfig, run_mode=TALLY_RUN, cost_plan=tally_plan
    ) as spec:
        yield spec


def counting_model(crash_at: int | None = None, done: list | None = None) -> ScriptedChatModel:
    """Counts the word in the window honestly; raises at call ``crash_at``; ``done`` collects (word,
    window) of each reply."""
    calls = [0]
    lock = threading.Lock()

    def reply(prompt: str) -> str:
        word, window = prompt.split("'", 2)[1], prompt.split(" in: ", 1)[1]
        with lock:
            calls[0] += 1
            if calls[0] == crash_at:
                raise Crash("model went away")
            if done is not None:
                done.append((word, window))
        return str(window.split().count(word))

    return ScriptedChatModel(reply_fn=reply)


class Crash(Exception):
    pass


def test_a_second_batched_strategy_runs_through_answer_many(tally_registered, tmp_path):
    llm = counting_model()
    answers = answer_many(
        TALLY_CORPUS, WORDS, strategy="tally", llm=llm, cache_dir=tmp_path, show_progress=False
    )
    assert [a.answer for a in answers] == ["3", "5"] and len(llm.calls) == len(WORDS) * N_WINDOWS
    for word, a in zip(WORDS, answers):
        trace = [
            s for s in a.steps if s["node"] == "tally"
        ]  # the trace's steps carry the contract's name
        assert [s["chunk"] for s in trace] == list(range(N_WINDOWS)) and trace[-1][
            "memory"
        ] == f"{word}: {a.answer}"
        assert (
            a.steps[-1]["node"] == "final_answer"
            and a.steps[-1]["word"] == word
            and a.steps[-1]["chunks"] == N_WINDOWS
        )
        assert a.usage.llm_calls == N_WINDOWS and not a.steps[-1]["replayed"]
    assert [
        p.name for p in (tmp_path / "tally").iterdir()
    ] != []  # checkpointed: its own option said so


def test_the_toy_strategy_resumes_after_a_crash_and_replays_without_calls(
    tally_registered, tmp_path
):
    first_done: list = []
    with pytest.raises(Crash):
        answer_many(
            TALLY_CORPUS,
            WORDS,
            strategy="tally",
            llm=counting_model(crash_at=6, done=first_done),
            cache_dir=tmp_path,
            in_flight=1,
        )
    second_done: list = []
    again = counting_model(done=second_done)
    answers = answer_many(
        TALLY_CORPUS, WORDS, strategy="tally", llm=again, cache_dir=tmp_path, in_flight=2
    )  # a runtime field: the same run
    assert [a.answer for a in answers] == ["3", "5"]
    assert (
        not set(first_done) & set(second_done)
        and len(first_done) + len(second_done) == len(WORDS) * N_WINDOWS
    )  # no window read twice
    assert answers[0].steps[-1]["resumed_from"] == len(first_done) // len(
        WORDS
    )  # the progress key said where to resume
    assert all(
        a.usage.run_llm_calls == N_WINDOWS for a in answers
    )  # the run's usage survived the crash
    assert (
        sum(a.usage.llm_calls for a in answers) == len(second_done) == len(again.calls)
    )  # this call's: only what it sent
    replay = counting_model()
    replayed = asyncio.run(
        aanswer_many(
            TALLY_CORPUS, WORDS, strategy="tally", llm=replay, cache_dir=tmp_path, kept_chars=3
        )
    )
    assert (
        replay.calls == []
        and [a.answer for a in replayed] == ["3", "5"]
        and replayed[0].steps[-1]["replayed"]
    )
    assert [(a.usage.llm_calls, a.usage.run_llm_calls) for a in replayed] == [(0, N_WINDOWS)] * len(
        WORDS
    )  # nothing sent now
    assert {len(s["memory"]) for s in replayed[0].steps if s["node"] == "tally"} == {
        3
    }  # the trace length read from its own field


def test_the_toy_runs_checkpoint_covers_what_a_budget_cannot(tally_registered, tmp_path):
    """Its plan (10 calls) does not fit 4: refused before any call, though resumable (its own resume
    option); after a crash its checkpoint holds 5 calls, so a budget of the other 5 finishes it and
    one of 4 is still refused."""
    refused = counting_model()
    with pytest.raises(BudgetExceeded, match="tally plans 10 calls"):
        answer_many(
            TALLY_CORPUS,
            WORDS,
            strategy="tally",
            llm=refused,
            cache_dir=tmp_path,
            in_flight=1,
            budget=Budget(max_llm_calls=4),
        )
    assert refused.calls == []
    with pytest.raises(Crash):
        answer_many(
            TALLY_CORPUS,
            WORDS,
            strategy="tally",
            llm=counting_model(crash_at=6),
            cache_dir=tmp_path,
            in_flight=1,
        )
    with pytest.raises(BudgetExceeded, match="less the 5 calls its checkpoint holds"):
        answer_many(
            TALLY_CORPUS,
            WORDS,
            strategy="tally",
            llm=refused,
            cache_dir=tmp_path,
            budget=Budget(max_llm_calls=4),
        )
    rest = counting_model()
    done = answer_many(
        TALLY_CORPUS,
        WORDS,
        strategy="tally",
        llm=rest,
        cache_dir=tmp_path,
        budget=Budget(max_llm_calls=5),
    )
    assert (
        [a.answer for a in done] == ["3", "5"]
        and len(rest.calls) == len(WORDS) * N_WINDOWS - 5
        and done[0].steps[-1]["resumed_from"] == 2
    )


def test_without_its_resume_option_the_toy_run_stays_in_memory(tally_registered, tmp_path):
    answers = answer_many(
        TALLY_CORPUS,
        WORDS,
        strategy="tally",
        llm=counting_model(),
        cache_dir=tmp_path,
        checkpointed=False,
    )
    assert [a.answer for a in answers] == ["3", "5"] and not (tmp_path / "tally").exists()


def test_a_batched_runs_nodes_see_what_its_budget_has_left(tally_registered, tmp_path, monkeypatch):
    """The budget handle reaches a batched strategy's context too, whatever its
    ``prepare_context`` copied."""
    seen: list[int | None] = []
    counted = tally

    def recording(task: dict[str, Any], runtime: Runtime[TallyContext]) -> dict:
        seen.append(runtime.context.budget.calls_left)
        return counted(task, runtime)

    monkeypatch.setattr(sys.modules[__name__], "tally", recording)
    answer_many(
        TALLY_CORPUS,
        WORDS,
        strategy="tally",
        llm=counting_model(),
        cache_dir=tmp_path,
        in_flight=1,
        budget=Budget(max_llm_calls=12),
    )
    assert len(seen) == len(WORDS) * N_WINDOWS and seen[0] == 12 and min(seen) == 12 - len(seen) + 1
