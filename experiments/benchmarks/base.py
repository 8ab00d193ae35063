"""What every benchmark loader shares: the sample type, the data root and file readers.

A loader turns an official record into a :class:`Sample` (corpus, question with the
benchmark's output-format instruction, gold answers, metadata). Files are read from
``$LONGCTX_DATA_DIR/<benchmark>/`` (json, jsonl or parquet); when a file is missing the
Hugging Face hub is tried through ``datasets`` (imported lazily), and when neither
works :class:`BenchmarkDataError` names the dataset and the path it expected.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longctx.retrieval import Corpus, paths
from longctx.retrieval.contract import Protocol, Question, Registry
from longctx.retrieval.contract.errors import DataError, UnknownName
from longctx.retrieval.extras import install_hint, require

#: Where benchmark files live unless a path is given: ``$LONGCTX_DATA_DIR`` or this default.
DEFAULT_DATA_DIR = Path("~/longctx-data").expanduser()

RECORD_SUFFIXES = (".jsonl", ".json", ".parquet")


class BenchmarkDataError(DataError, FileNotFoundError):
    """Benchmark files are neither on disk nor reachable on the hub."""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One benchmark item, ready for ``longctx.agents.answer(sample.corpus, sample.question)``.

    Attributes:
        sample_id: Unique id within the benchmark (predictions are keyed by it).
        benchmark: Registry name of the benchmark.
        dataset: Sub-dataset (``hotpotqa``, ``cmrc_mixup_16k``, ``financial``, ...).
        corpus: The documents to answer over.
        question: Question text, choices and output-format instruction.
        answers: Gold answers (several for some LongBench / LV-Eval items).
        metadata: Benchmark fields needed for scoring and slicing (length bucket,
            difficulty, domain, keywords, classes, ...).
    """

    sample_id: str
    benchmark: str
    dataset: str
    corpus: Corpus
    question: Question
    answers: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkSpec:
    """A registered benchmark: how to load it, prompt the full-context baseline and score it.

    Attributes:
        name: Registry name.
        version: Loader / prompt / scoring version recorded with results.
        load: ``load(path=None, *, datasets=None, **options) -> list[Sample]``.
        prompt: ``prompt(sample, context=None) -> str``, the official prompt around
            ``context`` (``None``: the sample's whole context, the full-context baseline).
        score: ``score(pairs, **options) -> dict`` over ``(Sample, ScoredPrediction)`` pairs;
            the dict holds ``per_sample`` (sample id -> 0-100 or None) beside the aggregates.
        protocol: ``protocol(sample) -> dict`` of :class:`~retrieval.contract.Protocol`
            settings (answer budget, input budget, temperature, chat-template flag).
        rag_prompt: ``rag_prompt(sample, chunks) -> str``, the official RAG prompt, where the
            benchmark's code has one (LongBench v2 ``0shot_rag``).
        strata: ``strata(samples) -> (sample id -> stratum, stratum -> weight)`` where
            the headline averages sub-sets (LongBench's macro over datasets and
            categories): the report's bootstrap resamples within each stratum and weighs
            them so (``longctx.experiments.reports.stats``). ``None``: the headline is the plain
            mean over questions.
        shared_first: Its prompts are ours, not an official protocol's (own corpora): strategies
            put the text every question shares first (their ``PromptSharing.options``, see
            :mod:`longctx.graphs.calls.prompt_sharing`), so a provider's prompt cache serves it to
            later questions.
    """

    name: str
    version: int
    load: Callable[..., list[Sample]]
    prompt: Callable[..., str]
    score: Callable[..., dict]
    protocol: Callable[[Sample], dict[str, Any]] | None = None
    rag_prompt: Callable[[Sample, Sequence[str]], str] | None = None
    strata: Callable[[Sequence[Sample]], tuple[dict[str, Any], dict[Any, float]]] | None = None
    shared_first: bool = False

    def with_protocol(self, sample: Sample) -> Sample:
        """``sample`` whose question carries this benchmark's
        :class:`~retrieval.contract.Protocol`."""
        protocol = Protocol(
            benchmark=self.name,
            prompt=functools.partial(self.prompt, sample),
            rag_prompt=functools.partial(self.rag_prompt, sample) if self.rag_prompt else None,
            **(self.protocol(sample) if self.protocol else {}),
        )
        return dataclasses.replace(
            sample, question=dataclasses.replace(sample.question, protocol=protocol)
        )


def macro_strata(
    key: Callable[[Sample], Any],
) -> Callable[[Sequence[Sample]], tuple[dict[str, Any], dict[Any, float]]]:
    """A ``strata`` rule for a headline that is the plain mean of the sub-set means
    (equal weights)."""

    def strata(samples: Sequence[Sample]) -> tuple[dict[str, Any], dict[Any, float]]:
        keys = {s.sample_id: key(s) for s in samples}
        return keys, dict.fromkeys(keys.values(), 1.0)

    return strata


def _benchmark(name: str, score: Callable[..., dict], **attrs: Any) -> BenchmarkSpec:
    return BenchmarkSpec(name=name, score=score, **attrs)


#: name -> :class:`BenchmarkSpec`. A benchmark module registers by decorating its scorer::
#:
#:     @BENCHMARKS.register("longbench_v2", version=VERSION, load=load, prompt=prompt)
#:     def score(pairs, **options): ...
#:
#: Third-party benchmarks join through the ``longctx.benchmarks`` entry-point group.
BENCHMARKS: Registry[BenchmarkSpec] = Registry(
    "benchmark", group="longctx.benchmarks", make_entry=_benchmark
)


def data_root(benchmark_dir: str, path: str | os.PathLike | None = None) -> Path:
    """The folder holding a benchmark's files: ``path`` if given, else
    ``$LONGCTX_DATA_DIR/<dir>``."""
    if path is not None:
        return Path(path).expanduser()
    base = os.environ.get("LONGCTX_DATA_DIR")
    return (Path(base).expanduser() if base else DEFAULT_DATA_DIR) / benchmark_dir


def resolve_inside(root: str | os.PathLike, relative: str | os.PathLike, *, what: str) -> Path:
    """``root / relative`` resolved (symlinks followed), or :class:`BenchmarkDataError` if it
    leaves ``root``.

    Every path a loader takes from a data file goes through here (the rule of
    :func:`longctx.retrieval.paths.resolve_inside`, shared with corpus folders): an absolute path, a
    ``..`` climb or a symlink out of the data root is rejected with the offending path
    named, so a crafted data file cannot read e.g. ``/etc/hostname`` into a corpus.
    """
    try:
        return paths.resolve_inside(root, relative)
    except paths.OutsideRoot as exc:
        raise BenchmarkDataError(
            f"{what}: path {str(relative)!r} from the data file resolves to {exc.target}, "
            f"outside the data root {exc.root}."
        ) from None


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of a ``.jsonl``, ``.json`` (a list, or ``{"data": [...]}``) or ``.parquet`` file.

    Raises:
        BenchmarkDataError: A file that is not UTF-8 JSON (Lines) or not Parquet, naming it
            (and the line).
        ValueError: Another file type, or JSON that is not a list of records.
    """
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as f:
                return [
                    _json(line, path, number) for number, line in enumerate(f, 1) if line.strip()
                ]
        if suffix == ".json":
            with path.open(encoding="utf-8") as f:
                data = _json(f.read(), path)
        elif suffix == ".parquet":
            require("pyarrow", extra="parquet", feature=f"reading {path}")
            import pyarrow.parquet as pq  # to_pylist gives plain lists, not numpy arrays

            try:
                return pq.read_table(path).to_pylist()
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise BenchmarkDataError(
                    f"{path} is not a readable Parquet file ({' '.join(str(exc).split())[:200]})"
                ) from None
        else:
            raise ValueError(
                f"{path}: unsupported file type {suffix!r}; use one of {', '.join(RECORD_SUFFIXES)}"
            )
    except UnicodeDecodeError as exc:
        raise BenchmarkDataError(f"{path} is not UTF-8 text ({exc.reason})") from None
    if isinstance(data, Mapping) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


def _json(text: str, path: Path, line: int | None = None) -> Any:
    """``text`` parsed as JSON, or a :class:`BenchmarkDataError` naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {line}" if line is not None else f"line {exc.lineno}"
        raise BenchmarkDataError(
            f"{path}, {where}: not JSON ({exc.msg}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise BenchmarkDataError(
            f"{path}{f', line {line}' if line else ''}: JSON nested too deep to read"
        ) from None


def find_file(folder: Path, stem: str) -> Path | None:
    """The first ``folder/stem{.jsonl,.json,.parquet}`` that exists, or ``None``."""
    return next(
        (folder / f"{stem}{s}" for s in RECORD_SUFFIXES if (folder / f"{stem}{s}").is_file()), None
    )


def load_records(
    folder: Path, stem: str, *, hub: tuple[str, str | None, str] | None, what: str
) -> list[dict[str, Any]]:
    """Records from ``folder/stem.*``, else from the hub, else a clear :class:`BenchmarkDataError`.

    Args:
        folder: Local folder to look in.
        stem: File name without suffix.
        hub: ``(repo_id, config_name, split)`` on the Hugging Face hub, or ``None``.
        what: Human-readable dataset name for the error message.
    """
    local = find_file(folder, stem)
    if local is not None:
        return read_records(local)
    expected = folder / f"{stem}.{{jsonl,json,parquet}}"
    if hub is None:
        raise BenchmarkDataError(f"{what}: no local file {expected}. See docs/benchmarks-data.md.")
    return load_from_hub(*hub, what=what, expected=expected)


def load_from_hub(
    repo_id: str, config: str | None, split: str, *, what: str, expected: Path
) -> list[dict[str, Any]]:
    """Records from the Hugging Face hub through ``datasets``; fails fast with a clear
    error offline."""
    hint = (
        f"Put the official file at {expected} (from the hub dataset {repo_id}), or go online with "
        f"the 'hub' extra installed ({install_hint('hub')})."
    )
    try:
        from datasets import load_dataset
    except ImportError:
        raise BenchmarkDataError(
            f"{what}: no local file, and loading the hub dataset {repo_id} needs the 'hub' extra "
            f"(the 'datasets' package), which is not installed. {hint}"
        ) from None
    try:
        return list(load_dataset(repo_id, config, split=split))
    except Exception as exc:  # network, auth or missing-config errors all mean: not available here
        raise BenchmarkDataError(
            f"{what}: not found locally and loading {repo_id!r} ({config or 'default'}) from the "
            "hub failed "
            f"({type(exc).__name__}: {exc}). {hint}"
        ) from exc


def only_known(requested: Sequence[str] | None, known: Sequence[str], benchmark: str) -> list[str]:
    """Validate a ``datasets=`` selection against the known names (all when ``None``)."""
    if requested is None:
        return list(known)
    unknown = [d for d in requested if d not in known]
    if unknown:
        raise UnknownName(f"{benchmark}: unknown dataset(s) {unknown}; known: {', '.join(known)}")
    return list(requested)
