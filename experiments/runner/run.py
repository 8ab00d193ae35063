"""Run (or resume) an experiment: the folder locked, the pairs still to answer planned, work
units answered in a thread pool, each finished row appended at once by the driver thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from longctx import make_chat_model
from longctx.agents.llm_cache import SQLiteLLMCache
from longctx.experiments.runner.activity import RunActivity
from longctx.experiments.runner.config import RunConfig, select_samples
from longctx.experiments.runner.folder import check_out_folder, make_out_folder, run_lock
from longctx.experiments.runner.interrupts import interrupt_run
from longctx.experiments.runner.manifest import finish_manifest
from longctx.experiments.runner.results_file import RESULTS_FILE, append_row
from longctx.experiments.runner.resume import is_retry, plan_run
from longctx.experiments.runner.units import run_unit, work_units
from longctx.graphs.runtime.cancel import CancelGuard


def run_experiment(
    config: RunConfig,
    out: str | Path,
    *,
    llm: BaseChatModel | None = None,
    samples: Sequence[Any] | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) an experiment into ``out``; returns counts of this invocation.

    Args:
        config: What to run.
        out: Result folder (created); rerunning into it resumes.
        llm: A chat model object, overriding ``config.llm`` (tests, custom clients).
        samples: Preloaded samples, overriding the benchmark loader.
        show_progress: A progress bar over (sample, strategy) pairs.
    """
    out = check_out_folder(out)  # a file there fails before samples load or a model starts
    samples = select_samples(
        config, samples
    )  # a bad questions file or model fails before the folder exists
    chat = make_chat_model(llm or config.llm)
    make_out_folder(out)
    with run_lock(out):
        return _run_locked(config, out, chat, samples, show_progress)


def _run_locked(
    config: RunConfig, out: Path, chat: BaseChatModel, samples: list[Any], show_progress: bool
) -> dict[str, Any]:
    if config.llm_cache and chat.cache is None:
        chat.cache = SQLiteLLMCache(out / "llm_cache.sqlite")
    todo, counts, invocation, retries = plan_run(out, config, chat, samples)
    stop = threading.Event()
    pool = ThreadPoolExecutor(config.concurrency)
    bar = tqdm(
        total=len(todo),
        desc=f"{config.benchmark}: answering with {', '.join(config.strategies)}",
        unit="answer",
        disable=not show_progress,
    )
    with (
        open(out / RESULTS_FILE, "a", encoding="utf-8") as sink,
        bar,
        _attached(chat, CancelGuard(stop), RunActivity(bar)),
    ):
        pending = {
            pool.submit(
                run_unit,
                group,
                name,
                chat,
                config,
                retry=is_retry(group, name, retries),
                run_id=out.name,
            )
            for name, group in work_units(todo, inject_once=config.inject_once)
        }
        try:
            for future in as_completed(
                list(pending)
            ):  # rows are written by this (the driver) thread only
                pending.discard(
                    future
                )  # before its rows: an interrupt while writing them never writes one twice
                for row in future.result():
                    append_row(sink, row, counts)
                    bar.update(1)
        except KeyboardInterrupt:
            raise interrupt_run(out, invocation, counts, pending, pool, stop, sink) from None
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    pool.shutdown()
    finish_manifest(out, invocation, counts)
    return counts


@contextlib.contextmanager
def _attached(chat: BaseChatModel, *handlers: Any) -> Iterator[None]:
    """``handlers`` on every call of ``chat`` for the duration of a run: the guard that refuses
    calls after Ctrl-C, and the activity shown on the progress bar."""
    before = chat.callbacks
    if before is not None and not isinstance(before, list):  # a callback manager: left as it is
        yield
        return
    chat.callbacks = [*(before or []), *handlers]
    try:
        yield
    finally:
        chat.callbacks = before
