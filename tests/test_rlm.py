"""RLM through ``answer()`` with a scripted model (the unsafe in-process REPL): the turns as graph
nodes, the answer protocols, sub-calls and their depth, the cost model's bounds, the budget stop
at any depth, usage, the report view and live events."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longctx import Budget, answer, estimate
from longctx.graphs.rlm.config import RlmConfig
from longctx.graphs.rlm.graph import most_calls
from longctx.graphs.rlm.presentation import turn_view
from longctx.graphs.sandbox.kinds import repl_factory
from longctx.graphs.sandbox.protocol import SandboxLimits
from longctx.graphs.sandbox.unsafe_inprocess import open_unsafe_inprocess_repl
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Document
from tests.scripted import ScriptedChatModel

CORPUS = Corpus(
    [
        Document("a", "The harbour was quiet.", title="A"),
        Document("b", "The clerk wrote the number 42 in red ink.", title="B"),
    ]
)
UNSAFE = {"repl": "unsafe_inprocess"}


def scripted(turns: list[str], sub: str = "sub-reply") -> ScriptedChatModel:
    """Root turns in order (a prompt with the system prompt); every other call answers ``sub``."""
    seen = {"root": 0}

    def reply(prompt: str) -> str:
        if "Recursive Language Model" in prompt or "You are tasked with answering" in prompt:
            i = seen["root"]
            seen["root"] += 1
            return turns[i] if i < len(turns) else "no code"
        return sub

    return ScriptedChatModel(reply_fn=reply)


def block(code: str) -> str:
    return f"Thinking.\n```repl\n{code}\n```"


def test_an_answer_in_the_third_turn_ends_the_run_with_each_turn_a_node():
    llm = scripted(
        [
            block("print(len(context), context[1][:5])"),
            block("x = llm_query('find the number: ' + context[1])\nprint(x)"),
            block("answer['content'] = 'forty-two'\nanswer['ready'] = True"),
        ]
    )
    result = answer(CORPUS, "What number?", strategy="rlm", llm=llm, **UNSAFE)
    assert result.answer == "forty-two"
    nodes = [s["node"] for s in result.steps]
    assert nodes == ["start", "turn", "turn", "turn", "finish"]
    turns = [s for s in result.steps if s["node"] == "turn"]
    assert turns[0]["stdout"] == ["2 B\nThe\n"]
    assert turns[1]["sub_calls"][0]["kind"] == "llm_query"
    assert turns[1]["sub_calls"][0]["depth"] == 1
    assert len(llm.calls) == 4  # three turns and one sub-call


def test_the_paper_preset_answers_with_final_var():
    llm = scripted([block("note = 'It is 42'"), "Done.\nFINAL_VAR(note)"])
    result = answer(CORPUS, "What number?", strategy="rlm", llm=llm, preset="paper", **UNSAFE)
    assert result.answer == "It is 42"


def test_out_of_turns_asks_once_more_for_the_answer():
    llm = scripted([block("print(1)")] * 2, sub="unused")
    llm.reply_fn = (lambda f: lambda p: "the default" if p.endswith("provided.") else f(p))(
        llm.reply_fn
    )
    result = answer(CORPUS, "Q?", strategy="rlm", llm=llm, max_iterations=2, **UNSAFE)
    assert [s["node"] for s in result.steps][-2:] == ["default_answer", "finish"]
    assert result.answer == "the default"
    assert len(llm.calls) == 3


def test_a_child_rlm_runs_its_own_turns_at_depth_one():
    child_turns = iter(
        [
            block("print(context)"),
            block("answer['content'] = 'child says 42'\nanswer['ready'] = True"),
        ]
    )
    root_turns = iter(
        [
            block("r = rlm_query('sub task: 42')\nprint(r)"),
            block("answer['content'] = r\nanswer['ready'] = True"),
        ]
    )

    def reply(prompt: str) -> str:
        if "Answer the following:" in prompt:
            return next(root_turns)
        if "Recursive Language Model" in prompt:
            return next(child_turns)
        return "plain"

    llm = ScriptedChatModel(reply_fn=reply)
    result = answer(CORPUS, "Q?", strategy="rlm", llm=llm, max_depth=2, **UNSAFE)
    assert result.answer == "child says 42"
    first = [s for s in result.steps if s["node"] == "turn"][0]
    assert [(c["kind"], c["depth"]) for c in first["sub_calls"]] == [("rlm_query", 1)]
    assert len(llm.calls) == 4


def test_sub_calls_past_the_turn_limit_are_refused_without_a_request():
    llm = scripted(
        [
            block("rs = [llm_query(str(i)) for i in range(5)]\nprint(rs)"),
            block("answer['content'] = 'ok'\nanswer['ready'] = True"),
        ]
    )
    result = answer(CORPUS, "Q?", strategy="rlm", llm=llm, max_sub_calls_per_turn=3, **UNSAFE)
    first = [s for s in result.steps if s["node"] == "turn"][0]
    assert "sub-call limit reached (3 per turn)" in first["stdout"][0]
    assert len(llm.calls) == 2 + 3


def test_the_plan_bounds_calls_by_turns_and_sub_call_limits():
    cfg = RlmConfig(max_iterations=3, max_sub_calls_per_turn=2)
    assert most_calls(cfg) == 3 * (1 + 2) + 1
    deep = RlmConfig(max_iterations=3, max_sub_calls_per_turn=2, max_depth=2)
    assert most_calls(deep) == 3 * (1 + 2 * (3 * 3 + 1)) + 1
    plan = estimate(
        CORPUS, "Q?", strategy="rlm", llm=scripted([]), max_iterations=3, max_sub_calls_per_turn=2
    )
    assert (plan.calls, plan.max_calls) == (1, 10)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_budget_stop_at_any_depth_sends_no_further_request(depth):
    """A budget of 3 calls: the third is a sub-call (depth 1 plain, or a child's turn); nothing
    after it is asked, and usage counts exactly what the model received."""
    child = iter([block("y = llm_query('deeper')\nprint(y)")] * 5)

    def reply(prompt: str) -> str:
        if "Answer the following:" in prompt:
            return block("a = rlm_query('t1')\nb = rlm_query('t2')\nprint(a, b)")
        if "Recursive Language Model" in prompt:
            return next(child)
        return "plain"

    llm = ScriptedChatModel(reply_fn=reply)
    result = answer(
        CORPUS,
        "Q?",
        strategy="rlm",
        llm=llm,
        max_depth=depth,
        budget=Budget(max_llm_calls=3),
        **UNSAFE,
    )
    assert result.stopped == "budget"
    assert len(llm.calls) == 3
    assert result.usage.llm_calls == 3
    assert result.usage.prompt_tokens == sum(len(c["prompt"].split()) for c in llm.calls)


def test_the_turn_view_shows_code_output_and_sub_calls():
    step = {
        "node": "turn",
        "turn": 2,
        "depth": 0,
        "code": ["x = llm_query('<q>')"],
        "stdout": ["out"],
        "stderr": [""],
        "sub_calls": [
            {"kind": "llm_query", "depth": 1, "model": "m", "prompt_chars": 1234, "reply": "r"}
        ],
        "final": None,
    }
    html = str(turn_view(step, {}).html)
    assert "x = llm_query(&#x27;&lt;q&gt;&#x27;)" in html or "&lt;q&gt;" in html
    assert "1,234 prompt chars" in html and "depth 1" in html


def test_the_unsafe_repl_keeps_bindings_and_runs_host_functions():
    repl = open_unsafe_inprocess_repl(
        bindings={"context": "abc"}, functions={"twice": lambda x: x * 2}, limits=SandboxLimits()
    )
    first = repl.execute("y = twice(context)\nprint(y)")
    second = repl.execute("raise KeyError('k')")
    assert first.stdout == "abcabc\n" and "y" in first.variables
    assert "KeyError: 'k'" in second.stderr and repl.value("y") == "abcabc"
    repl.close()
    with pytest.raises(RuntimeError):
        repl.execute("1")


def test_the_repl_kinds_name_their_factories():
    assert repl_factory("unsafe_inprocess") is open_unsafe_inprocess_repl
    with pytest.raises(ValueError, match="unknown REPL kind"):
        repl_factory("docker")


def _resumable_model() -> ScriptedChatModel:
    turns = {
        1: block("x = llm_query('first')\nprint(x)"),
        2: block("y = x + '!'\nprint(y)"),
        3: block("z = llm_query('third: ' + y)\nanswer['content'] = z\nanswer['ready'] = True"),
    }

    def reply(prompt: str) -> str:
        for i, text in turns.items():
            if prompt.endswith(f"Turn {i}/30:"):
                return text
        return "sub(" + prompt.split("\n")[-1] + ")"

    return ScriptedChatModel(reply_fn=reply)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_resume_replays_finished_turns_without_asking_their_sub_calls_again(isolated_cache):
    """Stopped by its budget at turn 3: the resumed call rebuilds the REPL by replaying turns 1-2
    (their code run again, ``llm_query('first')`` answered from the record) and asks only turn 3
    and its sub-call, ending as an uninterrupted run."""
    whole_llm = _resumable_model()
    whole = answer(CORPUS, "Q?", strategy="rlm", llm=whole_llm, **UNSAFE)
    llm = _resumable_model()
    first = answer(
        CORPUS,
        "Q?",
        strategy="rlm",
        llm=llm,
        checkpoint=True,
        budget=Budget(max_llm_calls=3),
        **UNSAFE,
    )
    assert first.stopped == "budget" and len(llm.calls) == 3
    resumed = answer(CORPUS, "Q?", strategy="rlm", llm=llm, checkpoint=True, **UNSAFE)
    assert resumed.answer == whole.answer == "sub(third: sub(first)!)"
    assert [c["prompt"] for c in llm.calls] == [c["prompt"] for c in whole_llm.calls]
    assert resumed.usage.llm_calls == 2


#: Sub-calls of the mid-turn script's first turn, and how many are answered before it stops.
N_SUBS, K_ANSWERED = 4, 2


def mid_turn_model(die_at: int | None = None) -> ScriptedChatModel:
    """Turn 1 makes ``N_SUBS`` sub-calls one after another, turn 2 answers with their replies;
    ``die_at``: the process exits (as if killed) when that call (1-based) comes."""
    turns = {
        1: block(f"outs = [llm_query('part %d' % i) for i in range({N_SUBS})]\nprint(outs)"),
        2: block("answer['content'] = ' '.join(outs)\nanswer['ready'] = True"),
    }

    def reply(prompt: str) -> str:
        if die_at is not None and len(model.calls) == die_at:
            os._exit(17)
        for i, text in turns.items():
            if prompt.endswith(f"Turn {i}/30:"):
                return text
        return "r(" + prompt + ")"

    model = ScriptedChatModel(reply_fn=reply)
    return model


def run_killed_mid_turn() -> None:
    """A checkpointed run killed at its ``K_ANSWERED + 2``-th call: turn 1's reply and
    ``K_ANSWERED`` sub-calls answered (a subprocess of the test below)."""
    answer(
        CORPUS, "Q?", strategy="rlm", llm=mid_turn_model(K_ANSWERED + 2), checkpoint=True, **UNSAFE
    )


def _subs(llm: ScriptedChatModel) -> list[str]:
    return [c["prompt"] for c in llm.calls if c["prompt"].startswith("part")]


@pytest.mark.parametrize("how", ["budget", "killed"])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_turn_stopped_after_k_of_n_sub_calls_asks_only_the_rest_on_resume(how, isolated_cache):
    """Stopped inside turn 1 after its reply and ``k`` of its ``n`` sub-calls (by a budget, or the
    process killed): the resumed run sends exactly the ``n - k`` sub-calls not answered and turn
    2, never turn 1's reply or an answered sub-call again, and answers as an uninterrupted run."""
    whole = answer(CORPUS, "Q?", strategy="rlm", llm=mid_turn_model(), **UNSAFE)
    if how == "budget":
        llm = mid_turn_model()
        first = answer(
            CORPUS,
            "Q?",
            strategy="rlm",
            llm=llm,
            checkpoint=True,
            budget=Budget(max_llm_calls=1 + K_ANSWERED),
            **UNSAFE,
        )
        assert first.stopped == "budget"
        assert _subs(llm) == [f"part {i}" for i in range(K_ANSWERED)]
    else:
        code = "from tests.test_rlm import run_killed_mid_turn; run_killed_mid_turn()"
        done = subprocess.run(
            [sys.executable, "-c", code], check=False, timeout=300, cwd=Path(__file__).parents[1]
        )
        assert done.returncode == 17
    llm = mid_turn_model()
    resumed = answer(CORPUS, "Q?", strategy="rlm", llm=llm, checkpoint=True, **UNSAFE)
    assert _subs(llm) == [f"part {i}" for i in range(K_ANSWERED, N_SUBS)]
    assert [c["prompt"].endswith("Turn 2/30:") for c in llm.calls] == [False] * (
        N_SUBS - K_ANSWERED
    ) + [True]
    assert resumed.answer == whole.answer == " ".join(f"r(part {i})" for i in range(N_SUBS))
    assert resumed.usage.llm_calls == N_SUBS - K_ANSWERED + 1


def test_each_turn_and_sub_call_is_an_event_as_it_happens():
    from longctx.agents.streaming import StepEvent, stream_answer

    llm = scripted(
        [
            block("bs = llm_query_batched(['a', 'b'])\nprint(bs)"),
            block("answer['content'] = 'done'\nanswer['ready'] = True"),
        ]
    )
    events = list(stream_answer(CORPUS, "Q?", strategy="rlm", llm=llm, **UNSAFE))
    steps = [e.step for e in events if isinstance(e, StepEvent) and e.live]
    nodes = [s["node"] for s in steps]
    assert nodes == ["start", "sub_call", "sub_call", "turn", "turn", "finish"]
    assert {(s["kind"], s["depth"], s["turn"]) for s in steps if s["node"] == "sub_call"} == {
        ("llm_query_batched", 1, 1)
    }


def test_the_codeact_bm25_preset_searches_in_the_repl_without_sub_calls(isolated_cache):
    llm = scripted(
        [
            block(
                "hits = search('clerk number red ink', 1)\nprint(hits[0]['doc_id'])\n"
                "print(llm_query('x'))"
            ),
            block("answer['content'] = 'b'\nanswer['ready'] = True"),
        ]
    )
    result = answer(CORPUS, "Q?", strategy="rlm", llm=llm, preset="codeact_bm25", **UNSAFE)
    first = [s for s in result.steps if s["node"] == "turn"][0]
    assert first["stdout"] == ["b\nError: sub-calls are disabled\n"]
    assert "- `search`: search(query: str, k: int = 5)" in llm.calls[0]["prompt"]
    assert len(llm.calls) == 2


def test_the_ceiling_reaches_every_evidence_document_in_the_corpus():
    from longctx.graphs.plugin.ceiling import CeilingEnv, CeilingItem
    from longctx.graphs.rlm.ceiling import RLM_CEILING

    item = CeilingItem(sample_id="s", corpus=CORPUS, question="Q?", evidence=("b", "missing"))
    reach = RLM_CEILING.reach(RlmConfig(), item, CeilingEnv())
    assert (reach.reached, reach.total) == (1, 2)


def test_a_cancelled_sub_call_sends_nothing_more_and_ends_the_turn():
    """The cancel guard refuses a sub-call: the rest of the cell's sub-calls send nothing and the
    turn raises the cancellation (as the run path expects from any node)."""
    from longctx.graphs.rlm.engine import Runner, Session, Settings
    from longctx.graphs.runtime.cancel import RunCancelled

    def reply(prompt: str) -> str:
        if prompt == "a":
            raise RunCancelled("cancelled")
        return block("x = [llm_query(p) for p in 'abc']")

    llm = ScriptedChatModel(reply_fn=reply)
    session = Session(Runner(llm, Settings(), open_unsafe_inprocess_repl), "ctx", "Q?")
    with pytest.raises(RunCancelled):
        session.step()
    session.close()
    assert [c["prompt"] for c in llm.calls][1:] == ["a"]


def test_a_child_rlm_gets_the_orchestrator_addendum_whatever_the_roots_setting():
    """As the official ``_subcall`` builds a child with ``RLM``'s default ``orchestrator=True``."""
    from longctx.graphs.rlm.prompts import ORCHESTRATOR_ADDENDUM

    def reply(prompt: str) -> str:
        if "Answer the following:" in prompt:
            return block("print(rlm_query('sub'))")
        return block("answer['content'] = 'c'\nanswer['ready'] = True")

    llm = ScriptedChatModel(reply_fn=reply)
    answer(CORPUS, "Q?", strategy="rlm", llm=llm, max_depth=2, orchestrator=False, **UNSAFE)
    root, child = llm.calls[0]["prompt"], llm.calls[1]["prompt"]
    assert ORCHESTRATOR_ADDENDUM not in root and ORCHESTRATOR_ADDENDUM in child


REPL_KINDS = [
    "unsafe_inprocess",
    pytest.param(
        "sandbox",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("longctx.graphs.sandbox.jail") is None,
            reason="no jailed REPL here",
        ),
    ),
]


@pytest.mark.parametrize("kind", REPL_KINDS)
def test_a_cell_keeps_the_official_semantics_in_each_repl_kind(kind):
    """Multi-line strings survive the cell's wrapping; code that does not compile gets the
    official SyntaxError text and runs nothing; a raised exception follows what the cell printed
    and keeps none of its names; classes may be defined."""
    from longctx.graphs.rlm.engine import Runner, Session, Settings

    replies = iter(
        [
            block('s = """a\n  b"""\nprint(repr(s))')
            + "\n"
            + block("x = (")
            + "\n"
            + block("kept = 1\nprint('before')\nlost = 2\nraise KeyError('k')")
            + "\n"
            + block("class C:\n    v = 3\nprint(C.v, 'lost' in SHOW_VARS())"),
        ]
    )
    llm = ScriptedChatModel(reply_fn=lambda _: next(replies))
    session = Session(Runner(llm, Settings(), repl_factory(kind)), "ctx", "Q?")
    try:
        facts = session.step()
    finally:
        session.close()
    assert facts["stdout"] == ["'a\\n  b'\n", "", "before\n", "3 False\n"]
    assert facts["stderr"][1] == "\nSyntaxError: '(' was never closed (<string>, line 1)"
    assert facts["stderr"][2] == "\nKeyError: 'k'"
    assert facts["stderr"][3] == ""


def test_the_paper_preset_answers_with_final_text_at_a_line_start():
    llm = scripted([block("x = 1"), "I am sure.\nFINAL(forty two)\n"])
    result = answer(CORPUS, "What number?", strategy="rlm", llm=llm, preset="paper", **UNSAFE)
    assert result.answer == "forty two" and len(llm.calls) == 2


def test_the_root_prompt_carries_the_benchmarks_format_instruction():
    from longctx.retrieval.contract import Question

    llm = scripted([block("answer['content'] = 'B'\nanswer['ready'] = True")])
    q = Question(text="Which?", choices={"A": "x", "B": "y"}, instruction="Answer with a letter.")
    answer(CORPUS, q, strategy="rlm", llm=llm, **UNSAFE)
    assert (
        "Answer the following: Which?\nChoices:\n(A) x\n(B) y\n\nAnswer with a letter.\n\n"
        in (llm.calls[0]["prompt"])
    )


#: Model code that catches whatever a sub-call raises and keeps asking.
HOSTILE_LOOP = (
    "for i in range(100000):\n"
    "    try:\n"
    "        llm_query('again %d' % i)\n"
    "    except BaseException:\n"
    "        pass\n"
    "print('survived')\n"
    "answer['content'] = 'leaked'\n"
    "answer['ready'] = True"
)


@pytest.mark.parametrize("stop", ["budget", "cancel"])
@pytest.mark.parametrize("kind", REPL_KINDS)
def test_a_stop_ends_the_turn_whatever_the_code_catches(kind, stop):
    """The model's code wraps ``llm_query`` in ``try/except BaseException`` and loops: the stop
    (a budget stop, a cancellation) at its second sub-call ends the turn there, in each REPL kind;
    no later host call reaches the host, no later request the model, and the turn raises the stop
    (before: the code got an error text 100,000 times and went on to answer)."""
    from longctx.graphs.metering.budget import BudgetReached
    from longctx.graphs.rlm.engine import Runner, Session, Settings
    from longctx.graphs.runtime.cancel import RunCancelled

    error = BudgetReached if stop == "budget" else RunCancelled

    def reply(prompt: str) -> str:
        if "Recursive Language Model" in prompt:
            return block(HOSTILE_LOOP)
        if prompt == "again 1":
            raise error("stopped here")
        return "answered"

    host_calls: dict[str, int] = {}

    def counting_factory(*, bindings, functions, limits):
        def counted(name, fn):
            def call(*args, **kwargs):
                host_calls[name] = host_calls.get(name, 0) + 1
                return fn(*args, **kwargs)

            return call

        counted_fns = {name: counted(name, fn) for name, fn in functions.items()}
        return repl_factory(kind)(bindings=bindings, functions=counted_fns, limits=limits)

    llm = ScriptedChatModel(reply_fn=reply)
    settings = Settings(limits=SandboxLimits(cpu_seconds=30))
    session = Session(Runner(llm, settings, counting_factory), "ctx", "Q?")
    try:
        with pytest.raises(error):
            session.step()
        assert host_calls == {"_rlm_host_llm_query": 2}
        assert [c["prompt"] for c in llm.calls][1:] == ["again 0", "again 1"]
        assert session.final is None
    finally:
        session.close()
