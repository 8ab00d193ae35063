"""The experiment runner: strategies x benchmark samples, resumable, every failure recorded.

Each finished (sample, strategy) pair is appended to ``results.jsonl`` at once (flushed
and fsynced), so an interrupted run loses only what was in flight. A rerun skips pairs
that succeeded and retries pairs that failed; the report reads the last row of each
pair. ``manifest.json`` records the library version, git revision, config, model and
the start and end of every invocation.

Rows are strict JSON whatever a strategy returns (:mod:`agents.jsonsafe`); one that
cannot be kept is a failed row saying why. Reading tolerates what kills and editors
leave (torn tails, bad lines, a BOM, a corrupt manifest); a retried pair's calls are not
replayed from the LLM cache.
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
from collections.abc import Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from agents import STRATEGIES, Budget, answer_many, make_chat_model
from agents.chat_models import describe
from agents.jsonsafe import MAX_CHARS, dumps, json_safe
from agents.llm_cache import SQLiteLLMCache
from experiments.activity import RunActivity
from experiments.benchmarks import BENCHMARKS, load_benchmark
from experiments.changed_settings import changed_fields, expected_config
from experiments.row_schema import row_problem
from graphs.cancel import CancelGuard
from graphs.config import redact_secrets
from graphs.llm import tokenizer_manifest
from graphs.prompt_sharing import shared_first_options
from retrieval.locks import LockHeld, describe_holder, exclusive_lock
from retrieval.redaction import redact_value

log = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "manifest.json"
#: A byte-order mark some editors put before the first line.
BOM = b"\xef\xbb\xbf"
#: Unreadable result lines named one by one in the warnings (the rest are counted).
MAX_REPORTED = 5
#: Held by the run using a result folder (released by the kernel if that process dies).
RUN_LOCK_FILE = ".run.lock"


class RunFolderError(ValueError):
    """A result folder, or its manifest, is missing or unreadable."""


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


def check_out_folder(out: str | Path) -> Path:
    """``out`` as a path, once it is known to be a folder or nothing yet.

    Raises:
        RunFolderError: ``out``, or a folder above it, is a file (or cannot be looked at).
    """
    out = Path(out)
    for path in (out, *out.parents):
        try:
            is_file = path.exists() and not path.is_dir()
        except OSError as exc:  # a name too long, a loop of links
            raise RunFolderError(f"Cannot create the result folder {out}: {exc.strerror or exc}") from None
        if is_file:
            raise RunFolderError(f"{path} is a file, not a folder: give --out a folder (new, or a run to resume)")
    return out


def make_out_folder(out: Path) -> None:
    """Create the result folder ``out`` (and its parents).

    Raises:
        RunFolderError: It cannot be created (a file in the way, no permission, a full disk), naming it.
    """
    check_out_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunFolderError(f"Cannot create the result folder {out}: {exc.strerror or exc}") from None


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
        strategy_options: Per-strategy config overrides, e.g. ``{"rag": {"top_k": 5}}``. For own corpora
            (``BenchmarkSpec.shared_first``) each strategy's shared-first options go under them
            (:func:`graphs.prompt_sharing.shared_first_options`; PAI's ``judge_order="chunk_first"``).
        llm_cache: Replay temperature-0 calls from ``<out>/llm_cache.sqlite``.
        loader_options: Options of the benchmark's loader, e.g. ``{"lengths": ["16k"]}`` for
            LV-Eval or ``{"seed": 1}`` for Loong.
        budget: Limits of each work unit (a sample x strategy, or a batched strategy's group of
            questions over one corpus): a plan over it fails its rows before any call; a unit that
            reaches it keeps rows marked ``stopped``, which a rerun answers again (MemAgent resumes).
        inject_once: "Inject once, ask many": every strategy answers all questions over one corpus
            in one work unit, so its index (or tree, or extraction) is built or loaded once per
            context and shared; MemAgent still reads the stream once per question. Off: a unit per
            question (a failure fails one row; the index is still cached on disk per corpus).
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
    budget: Budget | None = None
    inject_once: bool = False

    @classmethod
    def for_corpus(cls, corpus: str | Path, questions: str | Path, strategies: Sequence[str], **options: Any) -> RunConfig:
        """Your own documents and questions file (see :mod:`experiments.benchmarks.own`)."""
        loader = {**dict(options.pop("loader_options", {})), "corpus": str(Path(corpus).resolve())}
        return cls(benchmark="own", data_path=str(Path(questions).resolve()), strategies=tuple(strategies), loader_options=loader, **options)

    def __post_init__(self) -> None:
        if not self.strategies:
            raise ValueError("Give at least one strategy to run.")
        unique = tuple(dict.fromkeys(self.strategies))
        if len(unique) < len(self.strategies):  # each pair is answered (and paid for) once
            log.warning("Strategies named more than once run once: %s", ", ".join(sorted({s for s in self.strategies if self.strategies.count(s) > 1})))
        object.__setattr__(self, "strategies", unique)
        unknown = sorted(set(self.strategy_options) - set(self.strategies))
        if unknown:
            raise ValueError(f"strategy_options name strategies not being run: {unknown}")
        if self.benchmark in BENCHMARKS and BENCHMARKS.get(self.benchmark).shared_first:  # our prompts: the shared text goes first
            shared = {name: shared_first_options(STRATEGIES.get(name).prompt_sharing, self.strategy_options.get(name, {})) for name in self.strategies}
            object.__setattr__(self, "strategy_options", {name: options for name, options in shared.items() if options})
        for name in self.strategies:  # unknown names, options and values fail before any work
            STRATEGIES.get(name).make_config(**dict(self.strategy_options.get(name, {})))
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")


def read_rows(out: Path) -> list[dict[str, Any]]:
    """All result rows written so far, read to survive what a kill or a hand edit leaves.

    Read as bytes and split on newlines before decoding, so a torn last line (a killed
    writer, cut anywhere, inside a multi-byte character too) is dropped alone; the next
    append cuts it off. A line that is not UTF-8, not JSON, or JSON that is not a usable row
    (``[1,2]``, ``{}``, a count of ``1e308``, a prediction that is not text: see
    :mod:`experiments.row_schema`) is skipped with a warning naming the file, the line and
    what is wrong; its pair counts as not answered, so a rerun answers it again. A BOM is ignored.
    """
    path = Path(out) / RESULTS_FILE
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        row, problem = parse_row(line)
        if row is not None:
            rows.append(row)
        elif problem:
            problems.append(f"line {number}: {problem}")
    if tail.strip():
        row, problem = parse_row(tail)
        if row is not None:  # a whole row whose newline is missing: kept (the next append adds the newline)
            rows.append(row)
        elif is_whole_json(tail):  # whole, yet not a usable row
            problems.append(f"line {len(lines) + 1}: {problem}")
        else:
            log.warning("%s: line %d is torn (%d bytes, left by a killed run); ignored, the next run cuts it off", path, len(lines) + 1, len(tail))
    for problem in problems[:MAX_REPORTED]:
        log.warning("%s, %s; skipped", path, problem)
    if len(problems) > MAX_REPORTED:
        log.warning("%s: %d more unreadable lines skipped", path, len(problems) - MAX_REPORTED)
    return rows


def parse_row(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(row, None)`` for a line holding a result row, else ``(None, what is wrong)``
    (``(None, None)`` for a blank line)."""
    line = line.removeprefix(BOM).strip()
    if not line:
        return None, None
    try:
        row = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 ({exc.reason} at byte {exc.start})"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({getattr(exc, 'msg', type(exc).__name__)})"
    problem = row_problem(row)
    return (None, problem) if problem else (row, None)


def is_whole_json(line: bytes) -> bool:
    """Whether ``line`` is one complete JSON value (a row cut by a kill never is: its ``}`` comes last)."""
    try:
        json.loads(line.removeprefix(BOM).decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return True


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
    out = check_out_folder(out)  # a file there fails before samples load or a model starts
    samples = select_samples(config, samples)  # a bad questions file or model fails before the folder exists
    chat = make_chat_model(llm or config.llm)
    make_out_folder(out)
    with run_lock(out):
        return _run_locked(config, out, chat, samples, show_progress)


def _run_locked(config: RunConfig, out: Path, chat: BaseChatModel, samples: list[Any], show_progress: bool) -> dict[str, Any]:
    if config.llm_cache and chat.cache is None:
        chat.cache = SQLiteLLMCache(out / "llm_cache.sqlite")
    todo, counts, invocation, retries = plan_run(out, config, chat, samples)
    stop = threading.Event()
    pool = ThreadPoolExecutor(config.concurrency)
    bar = tqdm(total=len(todo), desc=f"{config.benchmark}: answering with {', '.join(config.strategies)}", unit="answer", disable=not show_progress)
    with open(out / RESULTS_FILE, "a", encoding="utf-8") as sink, bar, _attached(chat, CancelGuard(stop), RunActivity(bar)):
        pending = {pool.submit(run_unit, group, name, chat, config, retry=is_retry(group, name, retries), run_id=out.name)
                   for name, group in work_units(todo, inject_once=config.inject_once)}  # fmt: skip
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


def plan_run(out: Path, config: RunConfig, chat: BaseChatModel, samples: list[Any], *,
             same_models: Collection[str] = ()) -> tuple[list, dict[str, int], int, set]:  # fmt: skip
    """Pairs still to answer (not ok in ``out`` yet), this invocation's counters, its manifest
    entry, and the pairs among them that failed before (retries)."""
    latest = latest_rows(read_rows(out))
    done, changed = answered_pairs(latest, config, chat, same_models=same_models)
    retries = {key for key, row in latest.items() if row["status"] == "failed"}
    todo = [(s, name) for s in samples for name in config.strategies if (s.sample_id, name) not in done]
    if changed:
        warn_changed(out, changed)
    invocation = start_manifest(out, config, chat, len(samples), len(todo))
    counts = {"samples": len(samples), "pairs": len(samples) * len(config.strategies), "skipped": len(done), "changed": len(changed), "ok": 0,
              "failed": 0}  # fmt: skip
    return todo, counts, invocation, retries


def answered_pairs(latest: Mapping[tuple[str, str], dict[str, Any]], config: RunConfig, chat: BaseChatModel, *,
                   same_models: Collection[str] = ()) -> tuple[set[tuple[str, str]], dict[tuple[str, str], list[str]]]:  # fmt: skip
    """The pairs of ``latest`` (a folder's latest row per pair) that a run of ``config`` on ``chat`` skips:
    answered (not stopped by a budget, which is redone) with the settings this run would use
    (``same_models``: the ``llm`` of its other endpoints count as its own). The others answered ok
    come back with the fields that differ (:mod:`experiments.changed_settings`): they are answered again."""
    expected = {name: expected_config(name, config.strategy_options.get(name, {}), chat) for name in config.strategies}
    done, changed = set(), {}
    for key, row in latest.items():
        if row["status"] != "ok" or row.get("stopped") or key[1] not in expected:
            continue
        wanted = expected[key[1]]
        diff = changed_fields(row.get("config"), wanted, key[1], same_models=same_models) if wanted is not None else []
        if diff:
            changed[key] = diff
        else:
            done.add(key)
    return done, changed


def warn_changed(out: Path, changed: Mapping[tuple[str, str], list[str]]) -> None:
    """One warning per strategy: how many of its answers in ``out`` were made with other settings, and which."""
    by_strategy: dict[str, list[list[str]]] = {}
    for (_, strategy), diff in changed.items():
        by_strategy.setdefault(strategy, []).append(diff)
    for strategy, diffs in by_strategy.items():
        fields = sorted({d for diff in diffs for d in diff})
        log.warning("%s: %d %s answer(s) were made with other settings (%s); they are answered again (use another --out to keep both)",
                    out, len(diffs), strategy, "; ".join(fields[:6]) + (f"; {len(fields) - 6} more" if len(fields) > 6 else ""))


def is_retry(group: list[Any], strategy: str, retries: set) -> bool:
    """Whether a work unit answers a pair whose last row failed."""
    return any((s.sample_id, strategy) in retries for s in group)


def append_row(sink: Any, row: dict[str, Any], counts: dict[str, int]) -> None:
    """Append one result row durably (flushed and fsynced: a kill loses only what is in flight).

    The row is made plain JSON data, then every string of it is redacted
    (:func:`retrieval.redaction.redact_value`: an error may quote a provider's reply that
    echoes the request's credentials, and bytes may hold them too), then written by
    :func:`row_line` (JSON-safe, bounded; a row that cannot be written becomes a failed row
    saying why). A torn last line left by a killed writer is cut off first, so it cannot
    swallow this row.
    """
    line, status = row_line(row)
    _repair_tail(sink)
    sink.write(line)
    sink.flush()
    os.fsync(sink.fileno())
    counts[status] += 1


def row_line(row: dict[str, Any]) -> tuple[str, str]:
    """The JSONL line of ``row`` and its status: every value JSON-safe and bounded
    (:func:`agents.jsonsafe.json_safe`: characters, values, cycles); an answer that is not
    text or too long to keep, or a row that still cannot be serialized, is written as a failed
    row naming why (its rerun retries it)."""
    try:
        problem = _unkeepable_answer(row)
        if problem is None:  # plain data first, so bytes that hold a key are redacted too
            return dumps(redact_value(json_safe(row, max_chars=None, max_total=None))) + "\n", row["status"]
    except Exception as exc:  # noqa: BLE001 - whatever it is, the row is recorded as failed, never the run lost
        problem = redact_value(f"{type(exc).__name__}: {exc}")
    keep = {k: row.get(k) for k in ("sample_id", "benchmark", "dataset", "strategy", "corpus_tokens", "metadata", "seconds")}
    failed = {**keep, "status": "failed", "error": f"ResultNotWritable: {problem}"}
    log.warning("%s / %s: the result cannot be written (%s); recorded as failed", row.get("sample_id"), row.get("strategy"), problem)
    return dumps(redact_value(json_safe(failed))) + "\n", "failed"


def _unkeepable_answer(row: dict[str, Any]) -> str | None:
    """Why the scored text of an ok row cannot be kept whole, or ``None``: it is not text (a
    strategy handing back a mapping would make the whole run unreportable), or it is too long
    (a cut prediction would be scored as if the model had said it)."""
    if row.get("status") != "ok":
        return None
    for key in ("prediction", "answer"):
        value = row.get(key)
        if not isinstance(value, str):
            return f"its {key} is {'None' if value is None else 'a ' + type(value).__name__}, not text (a strategy's answer must be a string)"
        if len(value) > MAX_CHARS:
            return f"its {key} holds {len(value):,} characters, more than the {MAX_CHARS:,} a row keeps"
    return None


def _repair_tail(sink: Any) -> None:
    """End the file behind ``sink`` (opened for appending) with a complete line: a torn last
    line is cut off; a whole row that only lacks its newline gets one."""
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
        f.seek(end)
        tail = f.read()
    if is_whole_json(tail):  # a whole line (a row, or one the reader will name and skip): kept
        os.write(fd, b"\n")
        return
    log.warning("%s: dropping a torn last line of %d bytes (a killed run)", sink.name, size - end)
    os.ftruncate(fd, end)


def work_units(todo: list[tuple[Any, str]], *, inject_once: bool = False) -> list[tuple[str, list[Any]]]:
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
    return sorted(units, key=lambda unit: first[unit[1][0].corpus.fingerprint, unit[0]])  # stable: question order within a group


def run_unit(samples: list[Any], strategy: str, chat: BaseChatModel, config: RunConfig, *, retry: bool = False,
             run_id: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
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
        options = dict(config.strategy_options.get(strategy, {}))
        results = answer_many(samples[0].corpus, [_traced(s, run_id) for s in samples], strategy=strategy, llm=chat, show_progress=False,
                              budget=config.budget, **options)  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - recorded as failed rows; the rerun retries (and resumes) them
        seconds = (time.perf_counter() - started) / len(samples)
        return [failed_row(s, strategy, exc, seconds) for s in samples]
    rows = []
    for sample, result in zip(samples, results):
        try:
            rows.append(_ok_row(base_row(sample, strategy), result))
        except Exception as exc:  # noqa: BLE001 - an answer whose fields cannot make a row fails its row only
            rows.append(failed_row(sample, strategy, exc, 0.0, what="ResultNotWritable: "))
    return rows


def failed_row(sample: Any, strategy: str, exc: BaseException, seconds: float, *, what: str = "") -> dict[str, Any]:
    """The row of a pair that failed with ``exc`` (the exception being handled)."""
    return {
        **base_row(sample, strategy),
        "status": "failed",
        "error": f"{what}{type(exc).__name__}: {exc}",
        "traceback": traceback.format_exc(limit=8)[-4000:],
        "seconds": round(seconds, 3),
    }


def _traced(sample: Any, run_id: str | None = None) -> Any:
    """The sample's question, with benchmark, sample id and run (the run folder's name) for tracing tags."""
    traced = {**dict(sample.question.metadata), "benchmark": sample.benchmark, "sample_id": sample.sample_id,
              **({"run_id": run_id} if run_id else {})}  # fmt: skip
    return dataclasses.replace(sample.question, metadata=traced)


def base_row(sample: Any, strategy: str) -> dict[str, Any]:
    """The fields every row of ``sample`` x ``strategy`` carries, ok or failed."""
    return {
        "sample_id": sample.sample_id,
        "benchmark": sample.benchmark,
        "dataset": sample.dataset,
        "strategy": strategy,
        "corpus_tokens": sample.corpus.num_tokens,
        "corpus": sample.corpus.fingerprint,  # which questions share a context (cost per context in the report)
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
        "evidence": [{"doc_id": e.doc_id, "title": e.title, "chunk_id": e.chunk_id, "score": e.score, "snippet": e.text[:300],
                      **({"components": e.components} if e.components else {})} for e in result.evidence],  # fused/reranked: each stage's rank and score
        "route": next((s.get("route") for s in result.steps if "route" in s), None),
        "steps": [dict(s) for s in result.steps],
        "config": result.config,
        "messages": list(getattr(result, "messages", None) or []),  # the last call's prompt, for the drill-down
        "stopped": getattr(result, "stopped", None),  # "budget": the unit reached its budget; a rerun answers it again
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
    manifest = read_manifest(out, repair=True) if path.exists() else {"invocations": []}
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
        manifest = read_manifest(out, repair=True)
        finished = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **counts}
        if invocation < len(manifest["invocations"]):
            manifest["invocations"][invocation].update(finished)
        else:  # rebuilt since this invocation started: its entry is gone
            manifest["invocations"].append(finished)
        _write_json(path, manifest)


def read_manifest(out: Path, *, repair: bool = False) -> dict[str, Any]:
    """``out``'s manifest. One that is not a manifest (torn, corrupt, wrong shape) raises
    :class:`RunFolderError` naming it; with ``repair`` it is set aside instead (as
    ``manifest.json.corrupt-<time>``) and rebuilt from the rows (called under the manifest lock)."""
    path = Path(out) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_bytes().removeprefix(BOM).decode("utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest.get("invocations"), list):
            raise ValueError("not a manifest object with a list of invocations")
        return manifest
    except FileNotFoundError:
        raise RunFolderError(f"{path} does not exist: {out} is not a folder written by 'longctx run'") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        problem = f"{path} is unreadable ({type(exc).__name__}: {str(exc)[:200]})"
        if not repair:
            raise RunFolderError(f"{problem}; rerun the same 'longctx run' command into {out} to rebuild it") from None
    aside = path.with_name(f"{MANIFEST_FILE}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    path.replace(aside)
    log.warning("%s; set aside as %s and rebuilt from the rows", problem, aside.name)
    return _manifest_from_rows(out, aside)


def manifest_config(out: str | Path, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run config recorded in ``out``'s manifest (``manifest``: that manifest, already read).

    Raises:
        RunFolderError: The manifest is missing, unreadable, or records no config (benchmark and
            strategies), naming it.
    """
    path = Path(out) / MANIFEST_FILE
    config = (read_manifest(Path(out)) if manifest is None else manifest).get("config")
    if not isinstance(config, dict) or not isinstance(config.get("benchmark"), str) or not isinstance(config.get("strategies"), list):
        raise RunFolderError(f"{path} records no run config (benchmark and strategies); rerun the same 'longctx run' command into {out} to write it")
    return config


def _manifest_from_rows(out: Path, aside: Path) -> dict[str, Any]:
    """A manifest for a folder whose own was lost: one invocation summing up its rows (the
    config, model and versions are written by the invocation that rebuilds it)."""
    latest = latest_rows(read_rows(out)).values()
    ok = sum(r["status"] == "ok" for r in latest)
    summary = {"rebuilt": time.strftime("%Y-%m-%dT%H:%M:%S"), "set_aside": aside.name, "pairs": len(latest), "ok": ok, "failed": len(latest) - ok}
    return {"invocations": [summary]}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(redact_value(data), indent=2, ensure_ascii=False))
    tmp.replace(path)
