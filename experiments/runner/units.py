"""Work units: the (sample, strategy) pairs to answer grouped into the calls that answer them
(one question, or every question over one corpus), and the rows one unit's answers make."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx import STRATEGIES, answer_many
from longctx.agents.llm_cache import SQLiteLLMCache
from longctx.experiments.runner.config import RunConfig
from longctx.experiments.runner.rows import base_row, failed_row, ok_row
from longctx.graphs.plugin.strategy_registry import base_strategy


def work_units(
    todo: list[tuple[Any, str]], *, inject_once: bool = False
) -> list[tuple[str, list[Any]]]:
    """Work units: one sample each, except that a batched strategy (MemAgent) gets all samples
    sharing a corpus in one unit, so their questions share one pass over it; with ``inject_once``
    every strategy does, so it builds (or loads) its index once per corpus for all its questions.

    Units of one strategy over one corpus run back to back (in the order first seen): their prompts
    start alike (full context: the corpus), so a model that keeps one prompt in context (the
    embedded model, llama.cpp) reads the shared start once instead of after every other strategy's
    call, and a provider's prompt cache sees it while it is fresh."""
    units: list[tuple[str, list[Any]]] = []
    shared: dict[tuple[str, str], list[Any]] = {}
    for sample, name in todo:
        if inject_once or STRATEGIES.get(name).batched:
            key = (name, sample.corpus.fingerprint)
            if key not in shared:
                shared[key] = []
                units.append((name, shared[key]))
            shared[key].append(sample)
        else:
            units.append((name, [sample]))
    first: dict[tuple[str, str], int] = {}
    for i, (name, group) in enumerate(units):
        first.setdefault((group[0].corpus.fingerprint, name), i)
    return sorted(
        units, key=lambda unit: first[unit[1][0].corpus.fingerprint, unit[0]]
    )  # stable: question order within a group


def run_unit(
    samples: list[Any],
    strategy: str,
    chat: BaseChatModel,
    config: RunConfig,
    *,
    retry: bool = False,
    run_id: str | None = None,
) -> list[dict[str, Any]]:
    """Rows of one work unit, through the one run path (``answer_many``).

    A failure is recorded in the row of every sample of the unit, with its error; a
    batched unit keeps its checkpoint, so the rerun resumes it where it stopped. A
    ``retry`` (the unit failed before) does not replay the run's LLM cache: a cached reply
    may be what failed it, so its calls are made afresh and their replies replace the entries.
    """
    started = time.perf_counter()
    if retry and isinstance(chat.cache, SQLiteLLMCache):
        chat = chat.model_copy(update={"cache": chat.cache.refreshing()})
    try:
        options = dict(config.strategy_options.get(strategy, {}))  # a variant's, under its name
        base = base_strategy(strategy)  # what a variant runs: its options are in ``options``
        results = answer_many(
            samples[0].corpus,
            [_traced(s, run_id) for s in samples],
            strategy=base,
            llm=chat,
            show_progress=False,
            budget=config.budget,
            **options,
        )
    except Exception as exc:  # noqa: BLE001
        # recorded as failed rows; the rerun retries (and resumes) them
        seconds = (time.perf_counter() - started) / len(samples)
        return [failed_row(s, strategy, exc, seconds) for s in samples]
    rows = []
    for sample, result in zip(samples, results):
        try:
            rows.append(ok_row(base_row(sample, strategy), result))
        except Exception as exc:  # noqa: BLE001
            # an answer whose fields cannot make a row fails its row only
            rows.append(failed_row(sample, strategy, exc, 0.0, what="ResultNotWritable: "))
    return rows


def _traced(sample: Any, run_id: str | None = None) -> Any:
    """The sample's question, with benchmark, sample id and run (the run folder's name) for
    tracing tags."""
    traced = {
        **dict(sample.question.metadata),
        "benchmark": sample.benchmark,
        "sample_id": sample.sample_id,
        **({"run_id": run_id} if run_id else {}),
    }
    return dataclasses.replace(sample.question, metadata=traced)
