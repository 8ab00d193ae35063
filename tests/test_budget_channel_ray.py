"""The calls a Ray worker makes for a map stage are reserved with the caller's budget guard
before they are sent (graphs.runtime.ray_map through graphs.metering.budget_channel): at the
recording stub, a budget of N calls or T prompt tokens is never passed by the workers, and the
guard's counts equal what the stub received."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("LONGCTX_REQUIRE_RAY") == "1":  # make test-ray (CI): a missing Ray is a failure
    import ray
else:
    ray = pytest.importorskip("ray")

pytestmark = pytest.mark.ray

from langchain_core.runnables import RunnableLambda  # noqa: E402

from longctx import make_chat_model  # noqa: E402
from longctx.graphs.metering.budget import Budget, BudgetReached  # noqa: E402
from longctx.graphs.metering.budget_guard import BudgetGuard  # noqa: E402
from longctx.graphs.metering.usage import UsageTracker  # noqa: E402
from longctx.graphs.runtime.ray_map import ModelRecipe, counted_model, map_or_raise, run_batch  # noqa: E402
from tests.recording_server import RecordingServer, counted_words  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [f"question number {i} about the corpus" for i in range(6)]  # 6 words each


def words(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class Settings:
    ray_address: str | None = None
    ray_max_in_flight: int = 2
    ray_endpoints: tuple[str, ...] = ()


def ask_batch(recipe: ModelRecipe, batch: list[str]) -> dict[str, Any]:
    """One Ray task: each question of ``batch`` asked in turn."""
    llm, tracker = counted_model(recipe)
    done, error, trace = run_batch(batch, lambda q: str(llm.invoke(q).content), 1)
    return {"answers": done, "error": error, "traceback": trace, "usage": asdict(tracker.usage)}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """A local 2-CPU Ray instance on 127.0.0.1 whose workers import this checkout."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def run_map(stub: RecordingServer, budget: Budget) -> tuple[BudgetGuard, UsageTracker, list]:
    """The six questions on Ray, two a task, two tasks at once, under ``budget``."""
    guard, tracker = BudgetGuard(budget, count=words), UsageTracker(count=words)
    llm = make_chat_model("openai:stub", base_url=stub.url, max_retries=0)
    answers: list = []

    def stage(_: Any) -> None:
        map_or_raise(ask_batch, (), QUESTIONS, 2, llm, Settings(), answers.append, "questions")

    with pytest.raises(BudgetReached):
        RunnableLambda(stage).invoke(None, config={"callbacks": [guard, tracker]})
    return guard, tracker, answers


@pytest.mark.parametrize(
    "budget",
    [Budget(max_llm_calls=3), Budget(max_prompt_tokens=3 * 6 + 5)],
    ids=["calls", "tokens"],
)
def test_ray_workers_never_pass_the_callers_budget(budget):
    with RecordingServer(lambda r: "four words of answer") as stub:
        guard, tracker, _ = run_map(stub, budget)
        prompt = sum(len(counted_words(r)) for r in stub.requests)
    assert len(stub.requests) == guard.calls == 3
    assert guard.prompt_tokens == prompt == 18
    assert tracker.usage.llm_calls == 3 and tracker.usage.prompt_tokens == prompt
