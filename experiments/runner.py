"""The experiment runner: strategies x benchmark samples, resumable, every failure recorded.

Each finished (sample, strategy) pair is appended to ``results.jsonl`` at once (flushed
and fsynced), so an interrupted run loses only what was in flight. A rerun skips pairs
that succeeded and retries pairs that failed; the report reads the last row of each
pair. ``manifest.json`` records the library version, git revision, config, model and
the start and end of every invocation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from agents import STRATEGIES, answer_many, make_chat_model
from agents.chat_models import describe
from agents.llm_cache import SQLiteLLMCache
from experiments.activity import RunActivity
from experiments.benchmarks import BENCHMARKS, load_benchmark
from graphs.config import redact_secrets
from graphs.llm import tokenizer_manifest
from graphs.run import CancelGuard
from retrieval.locks import LockHeld, describe_holder, exclusive_lock

RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "manifest.json"
#: Held by the run using a result folder (released by the kernel if that process dies).
RUN_LOCK_FILE = ".run.lock"


class RunFolderLocked(LockHeld):
    """Another run (named in the message: pid, host, start time) is using the result folder."""


@contextlib.contextmanager
def run_lock(out: str | Path) -> Iterator[Path]:
    """Hold ``out``'s run lock: a second run on the same folder gets :class:`RunFolderLocked`
    instead of repeating the first one's work; a killed run's lock is taken over."""
    out = Path(out)
    try:
        with exclusive_lock(out / RUN_LOCK_FILE, wait=False, what=f"run folder {out}"):
            yield out
    except LockHeld as exc:
        if isinstance(exc, RunFolderLocked) or exc.path != (out / RUN_LOCK_FILE).absolute():
            raise
        raise RunFolderLocked(
            f"{out} is in use by another run ({describe_holder(exc.holder)}); wait for it to finish, "
            "or give another --out",
            path=exc.path,
            holder=exc.holder,
        ) from None


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One experiment: a benchmark, the strategies to compare, the model.

    Attributes:
        benchmark: Registry name (``longbench_v2``, ``lveval``, ``synthetic``, ...).
        strategies: Strategy registry names, compared on the same samples.
        llm: Chat model spec (``embedded``, ``openai:MODEL``); ignored when a model object is passed.
        data_path: Where the benchmark's files are (default ``$LONGCTX_DATA_DIR/<benchmark>``).
        datasets: Subsets of the benchmark (e.g. LongBench dataset names); all when empty.
        limit: First N samples only.
        concurrency: (sample, strategy) pairs in flight at once.
        strategy_options: Per-strategy config overrides, e.g. ``{"rag": {"top_k": 5}}``.
        llm_cache: Replay temperature-0 calls from ``<out>/llm_cache.sqlite``.
        loader_options: Options of the benchmark's loader, e.g. ``{"lengths": ["16k"]}`` for
            LV-Eval or ``{"seed": 1}`` for Loong.
    """

    benchmark: str
    strategies: tuple[str, ...]
    llm: str | None = None
    data_path: str | None = None
    datasets: tuple[str, ...] = ()
    limit: int | None = None
    concurrency: int = 2
    strategy_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    llm_cache: bool = True
    loader_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def for_corpus(cls, corpus: str | Path, questions: str | Path, strategies: Sequence[str], **options: Any) -> RunConfig:
        """Your own documents and questions file (see :mod:`experiments.benchmarks.own`)."""
        loader = {**dict(options.pop("loader_options", {})), "corpus": str(Path(corpus).resolve())}
        return cls(benchmark="own", data_path=str(Path(questions).resolve()), strategies=tuple(strategies), loader_options=loader, **options)

    def __post_init__(self) -> None:
        if not self.strategies:
            raise ValueError("Give at least one strategy to run.")
        unknown = sorted(set(self.strategy_options) - set(self.strategies))
        if unknown:
            raise ValueError(f"strategy_options name strategies not being run: {unknown}")
        for name in self.strategies:  # unknown names, options and values fail before any work
            STRATEGIES.get(name).make_config(**dict(self.strategy_options.get(name, {})))
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")


def read_rows(out: Path) -> list[dict[str, Any]]:
    """All result rows written so far (a torn line from a kill is ignored; the next append repairs it)."""
    path = Path(out) / RESULTS_FILE
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def latest_rows(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last row of each (sample, strategy) pair."""
    return {(r["sample_id"], r["strategy"]): r for r in rows}


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
    out = Path(out)
    samples = select_samples(config, samples)  # a bad questions file or model fails before the folder exists
    chat = make_chat_model(llm or config.llm)
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        return _run_locked(config, out, chat, samples, show_progress)


def _run_locked(config: RunConfig, out: Path, chat: BaseChatModel, samples: list[Any], show_progress: bool) -> dict[str, Any]:
    if config.llm_cache and chat.cache is None:
        chat.cache = SQLiteLLMCache(out / "llm_cache.sqlite")
    todo, counts, invocation = plan_run(out, config, chat, samples)
    stop = threading.Event()
    pool = ThreadPoolExecutor(config.concurrency)
    bar = tqdm(total=len(todo), desc=f"{config.benchmark}: answering with {', '.join(config.strategies)}", unit="answer", disable=not show_progress)
    with open(out / RESULTS_FILE, "a", encoding="utf-8") as sink, bar, _attached(chat, CancelGuard(stop), RunActivity(bar)):
        pending = {pool.submit(run_unit, group, name, chat, config) for name, group in work_units(todo)}
        try:
            for future in as_completed(list(pending)):  # rows are written by this (the driver) thread only
                pending.discard(future)  # before its rows: an interrupt while writing them never writes one twice
                for row in future.result():
                    append_row(sink, row, counts)
                    bar.update(1)
        except KeyboardInterrupt:
            raise _interrupt(out, invocation, counts, pending, pool, stop, sink) from None
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    pool.shutdown()
    finish_manifest(out, invocation, counts)
    return counts


#: Seconds an interrupted run waits for the answers in flight before it stops without them.
INTERRUPT_GRACE_SECONDS = 2.0


class RunInterrupted(Exception):
    """A run stopped by Ctrl-C: finished rows and checkpoints are kept; rerunning resumes it.

    Attributes:
        counts: This invocation's counts (``interrupted``: answers not written).
        in_flight: Work units still running (their threads are abandoned, not joined).
    """

    def __init__(self, message: str, counts: dict[str, int], in_flight: int) -> None:
        super().__init__(message)
        self.counts = counts
        self.in_flight = in_flight


def _interrupt(out: Path, invocation: int, counts: dict[str, int], futures: set, pool: ThreadPoolExecutor, stop: threading.Event, sink: Any) -> RunInterrupted:
    """Stop a run on Ctrl-C: no new units or model calls, the rows of units that finish within
    :data:`INTERRUPT_GRACE_SECONDS` written (a unit stopped mid-way writes none; its checkpoint
    stays), the invocation closed in the manifest. A second Ctrl-C meanwhile exits at once."""
    previous = _exit_on_next_interrupt()
    stop.set()
    pool.shutdown(wait=False, cancel_futures=True)
    tqdm.write(f"\nStopping: no new calls; waiting up to {INTERRUPT_GRACE_SECONDS:.0f} s for the answers in flight (Ctrl-C again quits now)", file=sys.stderr)
    finished, running = wait(futures, timeout=INTERRUPT_GRACE_SECONDS)
    for future in finished:
        if future.cancelled() or future.exception() is not None:
            continue
        for row in future.result():
            if row["status"] == "ok":  # a unit stopped by the interrupt failed because of it: not a result
                append_row(sink, row, counts)
    counts["interrupted"] = counts["pairs"] - counts["skipped"] - counts["ok"] - counts["failed"]
    finish_manifest(out, invocation, counts)
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
    return RunInterrupted(
        f"interrupted: {counts['ok']} answered now, {counts['interrupted']} not answered; "
        f"rerun the same command to resume (finished answers are kept in {out})",
        counts,
        len(running),
    )


def _exit_on_next_interrupt() -> Any:
    """Make a second Ctrl-C end the process at once (exit status 130); returns the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def exit_now(signum: int, frame: Any) -> None:
        os.write(2, b"\nlongctx: interrupted again, exiting now\n")
        os._exit(130)

    return signal.signal(signal.SIGINT, exit_now)


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


def select_samples(config: RunConfig, samples: Sequence[Any] | None) -> list[Any]:
    """The run's samples: preloaded ones, or the benchmark's, cut to ``config.limit``."""
    if samples is None:
        return run_samples(dataclasses.asdict(config))
    return list(samples)[: config.limit] if config.limit else list(samples)


def run_samples(config: Mapping[str, Any]) -> list[Any]:
    """The samples a run's config (a :class:`RunConfig` as a dict, e.g. from its manifest) selects."""
    options = dict(config.get("loader_options") or {})
    if config.get("datasets"):
        options["datasets"] = list(config["datasets"])
    samples = load_benchmark(config["benchmark"], config.get("data_path"), **options)
    return samples[: config["limit"]] if config.get("limit") else samples


def plan_run(out: Path, config: RunConfig, chat: BaseChatModel, samples: list[Any]) -> tuple[list, dict[str, int], int]:
    """Pairs still to answer (not ok in ``out`` yet), this invocation's counters, and its manifest entry."""
    done = {key for key, row in latest_rows(read_rows(out)).items() if row["status"] == "ok"}
    todo = [(s, name) for s in samples for name in config.strategies if (s.sample_id, name) not in done]
    invocation = start_manifest(out, config, chat, len(samples), len(todo))
    counts = {"samples": len(samples), "pairs": len(samples) * len(config.strategies), "skipped": len(done), "ok": 0, "failed": 0}
    return todo, counts, invocation


def append_row(sink: Any, row: dict[str, Any], counts: dict[str, int]) -> None:
    """Append one result row durably (flushed and fsynced: a kill loses only what is in flight).

    A torn last line left by a killed writer is cut off first, so it cannot swallow this row.
    """
    _repair_tail(sink)
    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    sink.flush()
    os.fsync(sink.fileno())
    counts[row["status"]] += 1


def _repair_tail(sink: Any) -> None:
    """Truncate the file behind ``sink`` (opened for appending) to its last complete line."""
    sink.flush()
    fd = sink.fileno()
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(sink.name, "rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        end = size
        while end > 0:  # the last newline, read backwards in blocks
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                end = start + cut + 1
                break
            end = start
    logging.getLogger(__name__).warning("%s: dropping a torn last line of %d bytes (a killed run)", sink.name, size - end)
    os.ftruncate(fd, end)


def work_units(todo: list[tuple[Any, str]]) -> list[tuple[str, list[Any]]]:
    """Work units: one sample each, except that a batched strategy (MemAgent) gets all samples
    sharing a corpus in one unit, so their questions share one pass over it."""
    units: list[tuple[str, list[Any]]] = []
    shared: dict[tuple[str, str], list[Any]] = {}
    for sample, name in todo:
        if STRATEGIES.get(name).batched:
            key = (name, sample.corpus.fingerprint)
            if key not in shared:
                shared[key] = []
                units.append((name, shared[key]))
            shared[key].append(sample)
        else:
            units.append((name, [sample]))
    return units


def run_unit(samples: list[Any], strategy: str, chat: BaseChatModel, config: RunConfig) -> list[dict[str, Any]]:
    """Rows of one work unit, through the one run path (``answer_many``).

    A failure is recorded in the row of every sample of the unit, with its error; a
    batched unit keeps its checkpoint, so the rerun resumes it where it stopped.
    """
    started = time.perf_counter()
    try:
        options = dict(config.strategy_options.get(strategy, {}))
        results = answer_many(samples[0].corpus, [_traced(s) for s in samples], strategy=strategy, llm=chat, show_progress=False, **options)
    except Exception as exc:  # noqa: BLE001 - recorded as failed rows; the rerun retries (and resumes) them
        failure = {
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8)[-4000:],
            "seconds": round((time.perf_counter() - started) / len(samples), 3),
        }
        return [{**base_row(s, strategy), **failure} for s in samples]
    return [_ok_row(base_row(s, strategy), r) for s, r in zip(samples, results)]


def _traced(sample: Any) -> Any:
    """The sample's question, with benchmark and sample id for tracing tags."""
    traced = {**dict(sample.question.metadata), "benchmark": sample.benchmark, "sample_id": sample.sample_id}
    return dataclasses.replace(sample.question, metadata=traced)


def base_row(sample: Any, strategy: str) -> dict[str, Any]:
    """The fields every row of ``sample`` x ``strategy`` carries, ok or failed."""
    return {
        "sample_id": sample.sample_id,
        "benchmark": sample.benchmark,
        "dataset": sample.dataset,
        "strategy": strategy,
        "corpus_tokens": sample.corpus.num_tokens,
        "metadata": {k: v for k, v in dict(sample.metadata).items() if isinstance(v, (str, int, float, bool, type(None)))},
    }


def _ok_row(base: dict[str, Any], result: Any) -> dict[str, Any]:
    """A finished answer as a row that explains itself: prediction, usage, evidence, steps and
    the effective config (preset, model, tokenizer, prompt versions; secrets redacted)."""
    return {
        **base,
        "status": "ok",
        "prediction": result.raw,
        "answer": result.answer,
        "usage": result.usage.to_dict(),
        "seconds": round(result.usage.seconds, 3),
        "queued_seconds": round(result.usage.queued_seconds, 3),  # waiting for a model shared with other answers
        "evidence_doc_ids": sorted({e.doc_id for e in result.evidence}),
        "evidence": [{"doc_id": e.doc_id, "title": e.title, "chunk_id": e.chunk_id, "score": e.score, "snippet": e.text[:300]} for e in result.evidence],
        "route": next((s.get("route") for s in result.steps if "route" in s), None),
        "steps": [dict(s) for s in result.steps],
        "config": result.config,
    }


def _git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _library_version() -> str:
    try:
        return metadata.version("longctx")
    except metadata.PackageNotFoundError:
        return "unknown"


def _manifest_lock(out: Path):
    """Serializes manifest read-modify-writes across threads and processes (no lost updates)."""
    return exclusive_lock(out / (MANIFEST_FILE + ".lock"), wait=True, what=f"manifest of {out}")


def start_manifest(out: Path, config: RunConfig, chat: BaseChatModel, n_samples: int, n_todo: int) -> int:
    """Record a new invocation (config redacted, model, versions) and return its index."""
    revision = _git_revision()
    with _manifest_lock(out):
        return _start_manifest_locked(out, config, chat, n_samples, n_todo, revision)


def _start_manifest_locked(out: Path, config: RunConfig, chat: BaseChatModel, n_samples: int, n_todo: int, revision: str | None) -> int:
    path = out / MANIFEST_FILE
    manifest = json.loads(path.read_text()) if path.exists() else {"invocations": []}
    spec = BENCHMARKS.get(config.benchmark) if config.benchmark in BENCHMARKS else None
    manifest.update(
        {
            "config": redact_secrets(json.loads(json.dumps(dataclasses.asdict(config), default=list))),
            "model": describe(chat),
            "tokenizer": tokenizer_manifest(chat),
            "library_version": _library_version(),
            "benchmark_version": getattr(spec, "version", None),
            "python": platform.python_version(),
        }
    )
    manifest["invocations"].append(
        {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "git_revision": revision, "samples": n_samples, "todo": n_todo}
    )
    _write_json(path, manifest)
    return len(manifest["invocations"]) - 1


def finish_manifest(out: Path, invocation: int, counts: dict[str, Any]) -> None:
    """Record the end of invocation ``invocation`` and its counts in the manifest."""
    path = out / MANIFEST_FILE
    with _manifest_lock(out):
        manifest = json.loads(path.read_text())
        manifest["invocations"][invocation].update({"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **counts})
        _write_json(path, manifest)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False))
    tmp.replace(path)
