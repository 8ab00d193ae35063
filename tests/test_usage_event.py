"""The usage a worker reports as a ``USAGE_EVENT`` (a Ray worker's extraction, a hosted reranker)
reaches the answer whole: every count of calls and tokens that ``Usage`` has."""

from __future__ import annotations

from dataclasses import fields

from langchain_core.callbacks import CallbackManager

from longctx.graphs.metering.usage import USAGE_EVENT, UsageTracker
from longctx.retrieval.contract import Usage

#: What an event must not add: the answer measures its own times, and ``earlier_*`` are a resumed
#: run's calls of earlier invocations (never sent now); ``estimated`` is a flag (or'ed, not summed).
NOT_ADDED = {"seconds", "index_seconds", "queued_seconds", "estimated"}


def test_an_event_adds_every_count_of_usage_and_nothing_else():
    counted = [
        f.name
        for f in fields(Usage)
        if f.name not in NOT_ADDED and not f.name.startswith("earlier_")
    ]
    sent = {name: i + 1 for i, name in enumerate(counted)}
    reported = {
        **sent,
        "seconds": 9.0,
        "queued_seconds": 9.0,
        "earlier_llm_calls": 9,
        "estimated": True,
    }
    tracker = UsageTracker()
    manager = CallbackManager(handlers=[tracker])
    manager.on_custom_event(USAGE_EVENT, reported, run_id=None)
    manager.on_custom_event(USAGE_EVENT, sent, run_id=None)
    got = tracker.usage
    assert {name: getattr(got, name) for name in counted} == {
        name: 2 * n for name, n in sent.items()
    }
    assert (got.seconds, got.queued_seconds, got.earlier_llm_calls, got.estimated) == (
        0.0,
        0.0,
        0,
        True,
    )
