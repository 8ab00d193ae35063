"""Model calls made in another process are reserved with the parent's budget guard before they
are sent (graphs.metering.budget_channel / graphs.metering.budget_client): a real child process
making real HTTP calls to the recording stub never passes a budget of calls, prompt tokens or
dollars, and what the guard and the channel count equals what the stub received."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableLambda

from longctx.graphs.metering.budget import Budget, BudgetReached
from longctx.graphs.metering.budget_channel import BudgetChannel, guard_of
from longctx.graphs.metering.budget_client import TICKET_ENV, BudgetChannelError, BudgetClient
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.metering.usage import UsageTracker
from tests.budget_child import MAX_TOKENS
from tests.recording_server import RecordingServer, counted_words

ROOT = Path(__file__).resolve().parent.parent
REPLY = "the answer is four words"


def words(text: str) -> int:
    return len(text.split())


def run_child(
    channel: BudgetChannel, url: str, calls: int, *mode: str
) -> subprocess.CompletedProcess:
    env = {**os.environ, TICKET_ENV: channel.ticket, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.budget_child", url, str(calls), *mode]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)


def stub_totals(stub: RecordingServer) -> tuple[int, int, int]:
    """Calls, prompt tokens and completion tokens the stub received and reported."""
    prompt = sum(len(counted_words(r)) for r in stub.requests)
    return len(stub.requests), prompt, len(stub.requests) * words(REPLY)


def test_a_child_process_never_passes_a_call_budget():
    with RecordingServer(lambda r: REPLY) as stub:
        guard, tracker = BudgetGuard(Budget(max_llm_calls=3), count=words), UsageTracker()

        def node(_: object) -> subprocess.CompletedProcess:  # a strategy's node running a sandbox
            with BudgetChannel(guard_of()) as channel:
                child = run_child(channel, stub.url, 6)
            channel.report_usage()  # the child's calls in the answer's usage
            return child

        child = RunnableLambda(node).invoke(None, config={"callbacks": [guard, tracker]})
        out = json.loads(child.stdout)
        assert child.returncode == 0, child.stderr
        assert out["sent"] == 3 and out["refused"].startswith("budget reached: 3 calls")
        calls, prompt, completion = stub_totals(stub)
    assert calls == guard.calls == 3
    usage = tracker.usage
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (
        3,
        prompt,
        completion,
    )
    assert not usage.estimated
    assert guard.prompt_tokens == prompt  # the parent counted each prompt as the stub read it


def test_children_running_together_share_one_call_budget():
    with RecordingServer(lambda r: REPLY) as stub:
        guard = BudgetGuard(Budget(max_llm_calls=3), count=words)
        with BudgetChannel(guard) as channel:
            env = {**os.environ, TICKET_ENV: channel.ticket, "PYTHONPATH": str(ROOT)}
            command = [sys.executable, "-m", "tests.budget_child", stub.url, "4"]
            children = [
                subprocess.Popen(command, env=env, stdout=subprocess.PIPE, cwd=ROOT)
                for _ in range(2)
            ]
            sent = [json.loads(c.communicate(timeout=120)[0])["sent"] for c in children]
    assert sum(sent) == len(stub.requests) == guard.calls == channel.usage.llm_calls == 3


def test_a_child_process_never_passes_a_prompt_token_budget():
    per_call = words("question number 0 about the corpus")  # 6 words a call
    with RecordingServer(lambda r: REPLY) as stub:
        guard = BudgetGuard(Budget(max_prompt_tokens=2 * per_call + per_call - 1), count=words)
        with BudgetChannel(guard) as channel:
            out = json.loads(run_child(channel, stub.url, 5).stdout)
        calls, prompt, _ = stub_totals(stub)
    assert out["sent"] == calls == 2 and "prompt tokens" in out["refused"]
    assert guard.prompt_tokens == prompt == 2 * per_call <= guard.budget.max_prompt_tokens


def test_a_cost_budget_reserves_the_answer_budget_and_settles_at_the_stubs_usage():
    price = (1_000_000.0, 2_000_000.0)  # $1 a prompt token, $2 a completion token
    per_call = words("question number 0 about the corpus")
    reserved = per_call + 2 * MAX_TOKENS  # a call's most: its prompt and its whole answer budget
    settled = per_call + 2 * words(REPLY)
    limit = 2 * settled + reserved - 1  # two calls settle; a third's most would pass
    with RecordingServer(lambda r: REPLY) as stub:
        guard = BudgetGuard(Budget(max_cost_usd=limit, price=price), count=words)
        with BudgetChannel(guard) as channel:
            out = json.loads(run_child(channel, stub.url, 5).stdout)
        calls, prompt, completion = stub_totals(stub)
    assert out["sent"] == calls == 2 and out["refused"].startswith("budget reached: $")
    assert guard.spent_usd == pytest.approx(prompt + 2 * completion) == 2 * settled
    assert guard.spent_usd <= limit


def test_a_child_that_dies_holding_a_grant_leaves_its_reservation_standing():
    price = (1_000_000.0, 2_000_000.0)
    with RecordingServer(lambda r: REPLY) as stub:
        guard = BudgetGuard(Budget(max_cost_usd=1000, price=price), count=words)
        with BudgetChannel(guard) as channel:
            child = run_child(channel, stub.url, 1, "die")
        assert child.returncode == -9 and not stub.requests
    reserved = words("question number 0 about the corpus") + 2 * MAX_TOKENS
    assert guard.spent_usd == pytest.approx(reserved) and channel.abandoned == 1
    assert channel.usage.llm_calls == 1 and channel.usage.estimated


def test_unusable_usage_a_failure_and_a_stranger_keep_the_reservation():
    guard = BudgetGuard(Budget(max_cost_usd=1000, price=(1e6, 1e6)), count=words)
    with BudgetChannel(guard) as channel:
        client = BudgetClient(channel.ticket)
        client.reserve("one two", max_completion_tokens=3).settle(
            {"prompt_tokens": -5, "completion_tokens": 1}
        )
        assert guard.spent_usd == pytest.approx(5)  # a negative count cannot refund the reservation
        with pytest.raises(ConnectionError):
            with client.call("one two", max_completion_tokens=3):
                raise ConnectionError("server went away")
        assert guard.spent_usd == pytest.approx(10) and channel.usage.failed_calls == 1
        with pytest.raises(BudgetChannelError):
            BudgetClient(channel.ticket[:-4] + "0000")  # a wrong key is not served
        client.close()
    with pytest.raises(BudgetChannelError):  # no channel: no grant, no call
        BudgetClient(channel.ticket).reserve("x", max_completion_tokens=1)


def test_a_refusal_is_final_and_the_guard_is_found_in_a_run_config():
    guard = BudgetGuard(Budget(max_llm_calls=1), count=words)
    assert guard_of({"callbacks": [object(), guard]}) is guard and guard_of({}) is None
    with BudgetChannel(guard) as channel:
        client = BudgetClient(channel.ticket)
        client.reserve("a", max_completion_tokens=1).settle(None)
        with pytest.raises(BudgetReached, match="1 calls"):
            client.reserve("b", max_completion_tokens=1)
        client.close()
