"""The experiment runner on Ray: work units as Ray tasks, rows written by the driver.

Same output folder as :func:`longctx.experiments.runner.run_experiment` (``results.jsonl`` rows
appended and fsynced one at a time as tasks finish, ``manifest.json``), same resume rule
(pairs whose latest row is ok are skipped) and failures are rows, including a task that
Ray itself lost. Each LLM endpoint has at most ``config.concurrency`` work units in
flight; units go to the endpoint with the fewest in flight, so several
OpenAI-compatible servers share the load.
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from longctx import make_chat_model
from longctx.agents.llm_cache import SQLiteLLMCache
from longctx.experiments.runner import RESULTS_FILE, RunConfig, select_samples
from longctx.experiments.runner.folder import make_out_folder
from longctx.experiments.runner.manifest import finish_manifest
from longctx.experiments.runner.results_file import append_row
from longctx.experiments.runner.resume import is_retry, plan_run
from longctx.experiments.runner.rows import base_row
from longctx.experiments.runner.units import run_unit, work_units
from longctx.graphs.calls.llm import model_id
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.retrieval.ray_support import ensure_ray


class EndpointPool:
    """Bounded in-flight work per endpoint; :meth:`acquire` picks the least busy one with room.

    Args:
        endpoints: Base URLs (``None`` stands for the model's own default).
        concurrency: Work units in flight per endpoint.
    """

    def __init__(self, endpoints: Sequence[str | None], concurrency: int):
        if not endpoints:
            raise ValueError("at least one endpoint is needed")
        self.concurrency = concurrency
        self.in_flight = {i: 0 for i in range(len(endpoints))}
        self.endpoints = list(endpoints)

    def acquire(self) -> int | None:
        """Index of the endpoint to use next, or ``None`` when every one is full."""
        slot = min(self.in_flight, key=lambda i: (self.in_flight[i], i))
        if self.in_flight[slot] >= self.concurrency:
            return None
        self.in_flight[slot] += 1
        return slot

    def release(self, slot: int) -> None:
        """One unit on endpoint ``slot`` finished."""
        self.in_flight[slot] -= 1


def with_map_endpoints(config: RunConfig, endpoints: Sequence[str]) -> RunConfig:
    """``config`` whose strategies with a stage of their own on Ray (their registry entry's
    ``ray_stage``, e.g. an extraction over every document) spread that stage's calls over
    ``endpoints`` too, as the stage decides from the run's options: a unit is one question's
    answer, and the stage's tasks are where its calls are."""
    options = dict(config.strategy_options)
    for name in config.strategies:
        stage = STRATEGIES.get(name).ray_stage if name in STRATEGIES else None
        own = options.get(name, {})
        if stage is not None and (spread := stage.spread(own, endpoints)) != own:
            options[name] = dict(spread)
    return (
        dataclasses.replace(config, strategy_options=options)
        if options != config.strategy_options
        else config
    )


def _unit_task(
    samples: list[Any],
    strategy: str,
    config: RunConfig,
    llm: Any,
    base_url: str | None,
    cache: str | None,
    retry: bool = False,
) -> list[dict]:
    """One work unit on a Ray worker: its own chat client for the unit's endpoint, then
    the local code."""
    chat = make_chat_model(llm, base_url=base_url) if base_url else make_chat_model(llm)
    if (
        cache and chat.cache is None and Path(cache).parent.is_dir()
    ):  # the run folder is shared with this node
        chat.cache = SQLiteLLMCache(cache)
    return run_unit(samples, strategy, chat, config, retry=retry)


def run_experiment_ray(
    config: RunConfig,
    out: str | Path,
    *,
    address: str | None = None,
    endpoints: Sequence[str] = (),
    llm: BaseChatModel | None = None,
    samples: Sequence[Any] | None = None,
    show_progress: bool = True,
    task_cpus: float = 1.0,
) -> dict[str, Any]:
    """Run (or resume) an experiment on Ray into ``out``; returns counts as ``run_experiment`` does.

    Args:
        config: What to run; ``config.concurrency`` bounds the units in flight per endpoint.
        out: Result folder on the driver (created); rerunning into it resumes.
        address: Ray cluster address (``auto``, ``HOST:6379``, ``ray://HOST:10001``); none:
            ``$RAY_ADDRESS`` or a new local instance.
        endpoints: OpenAI-compatible base URLs for an ``openai:MODEL`` spec; default
            ``$OPENAI_BASE_URL`` as the driver sees it.
        llm: A (picklable) chat model object instead of ``config.llm``; endpoints are then
            not allowed.
        samples: Preloaded samples, overriding the benchmark loader.
        show_progress: A progress bar over (sample, strategy) pairs.
        task_cpus: CPUs Ray reserves per work unit.
    """
    spec = llm or config.llm
    is_openai = isinstance(spec, str) and spec.startswith("openai:")
    if endpoints and not is_openai:
        raise ValueError("--endpoints needs an 'openai:MODEL' chat model spec")
    urls: list[str | None] = list(endpoints) or [
        os.environ.get("OPENAI_BASE_URL") if is_openai else None
    ]
    config = with_map_endpoints(config, endpoints)
    ray = ensure_ray(address)
    out = Path(out)
    samples = select_samples(config, samples)  # a bad questions file fails before the folder exists
    make_out_folder(out)
    chat = (
        make_chat_model(spec, base_url=urls[0]) if is_openai and urls[0] else make_chat_model(spec)
    )
    replicas = (
        {model_id(make_chat_model(spec, base_url=url)) for url in urls[1:] if url}
        if is_openai
        else set()
    )  # one model, several servers
    todo, counts, invocation, retries = plan_run(out, config, chat, samples, same_models=replicas)
    cache = str((out / "llm_cache.sqlite").resolve()) if config.llm_cache else None
    task = ray.remote(num_cpus=task_cpus, max_retries=0)(_unit_task)
    pool = EndpointPool(urls, config.concurrency)
    pending = deque((name, group) for name, group in work_units(todo))
    running: dict[Any, tuple[str, list[Any], int]] = {}
    with open(out / RESULTS_FILE, "a", encoding="utf-8") as sink:
        desc = f"{config.benchmark} (ray): answering with {', '.join(config.strategies)}"
        with tqdm(total=len(todo), desc=desc, unit="answer", disable=not show_progress) as bar:
            while pending or running:
                while pending and (slot := pool.acquire()) is not None:
                    name, group = pending.popleft()
                    ref = task.remote(
                        group, name, config, spec, urls[slot], cache, is_retry(group, name, retries)
                    )
                    running[ref] = (name, group, slot)
                finished, _ = ray.wait(list(running), num_returns=1)
                name, group, slot = running.pop(finished[0])
                pool.release(slot)
                for row in _rows_of(ray, finished[0], name, group):
                    append_row(sink, row, counts)
                    bar.update(1)
    finish_manifest(out, invocation, counts)
    return counts


def _rows_of(ray: Any, ref: Any, strategy: str, samples: list[Any]) -> list[dict[str, Any]]:
    """A finished task's rows; a task Ray lost (worker died, unpicklable result) fails each
    of its pairs."""
    try:
        return ray.get(ref)
    except Exception as exc:  # noqa: BLE001
        # RayError and friends: recorded as failed rows, retried on rerun
        error = f"{type(exc).__name__}: {str(exc)[:2000]}"
        trace = traceback.format_exc(limit=8)[-4000:]
        return [
            {
                **base_row(s, strategy),
                "status": "failed",
                "error": error,
                "traceback": trace,
                "seconds": 0.0,
            }
            for s in samples
        ]
