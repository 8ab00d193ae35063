"""BABILong's files: the length names, the layouts a task x length is found in, and the records read
and checked.

Files are found, for a task and a length, in any of these layouts under the data folder:

- ``{length}/{task}.jsonl`` (or ``.json`` / ``.parquet``): the plain layout, what
  ``longctx.experiments.babilong_gen`` writes;
- ``{length}/{task}-00000-of-0000N.parquet``: the hub's per-length files (1k-samples, later
  100-sample);
- ``{task}/{length}-00000-of-00001.parquet``: the 100-sample set's earlier per-task files;
- ``{task}/{length}.json``: what the official ``data/create_tasks.py`` writes.

Missing files come from the hub through ``datasets`` (``load_dataset(repo, length, split=task)``,
as ``run_model_on_babilong.py`` loads them) when the ``hub`` extra is installed. A malformed record
is refused with one line naming the file, the record and the field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BenchmarkDataError,
    find_file,
    load_from_hub,
    read_records,
)
from longctx.retrieval.contract.errors import UnknownName

#: ``collect_results.py`` ``LENGTHS``: the column order of the official tables.
LENGTHS = (
    "0k",
    "1k",
    "2k",
    "4k",
    "8k",
    "16k",
    "32k",
    "64k",
    "128k",
    "256k",
    "512k",
    "1M",
    "2M",
    "10M",
)
_LENGTH = re.compile(r"(\d+)([kM])")
FIELDS = ("input", "question", "target")


def length_tokens(name: str) -> int:
    """Tokens of a length name: ``0k`` -> 0, ``16k`` -> 16,000, ``10M`` -> 10,000,000 (any ``<N>k``
    / ``<N>M``, e.g. a generated ``4M``)."""
    match = _LENGTH.fullmatch(name)
    if match is None:
        raise ValueError(f"Length {name!r}: use <N>k or <N>M, e.g. 16k, 1M, 10M.")
    return int(match.group(1)) * (1000 if match.group(2) == "k" else 1_000_000)


def lengths_in(folder: Path, requested: Sequence[str] | None) -> list[str]:
    """The requested lengths (checked), else the official ones and any other ``<N>k`` / ``<N>M``
    folder on disk, shortest first."""
    if requested is not None:
        bad = [n for n in requested if not _LENGTH.fullmatch(n)]
        if bad:
            raise UnknownName(
                f"babilong: unknown length(s) {bad}; known: {', '.join(LENGTHS)} or any <N>k / <N>M"
            )
        return list(requested)
    found = (
        {p.name for p in folder.iterdir() if p.is_dir() and _LENGTH.fullmatch(p.name)}
        if folder.is_dir()
        else set()
    )
    return sorted(set(LENGTHS) | found, key=length_tokens)


def task_files(folder: Path, task: str, length: str) -> list[Path]:
    """The files holding ``task`` at ``length`` in the first layout that has them
    (module docstring)."""
    plain = find_file(folder / length, task)
    if plain is not None:
        return [plain]
    for sub, pattern in (
        (folder / length, f"{task}-*-of-*.parquet"),
        (folder / task, f"{length}-*-of-*.parquet"),
    ):
        shards = sorted(sub.glob(pattern)) if sub.is_dir() else []
        if shards:
            return shards
    made = find_file(folder / task, length)
    return [made] if made is not None else []


def _checked(record: Any, where: str) -> dict[str, Any]:
    """A record's three fields (and a generated record's ``supporting_facts`` /
    ``supporting_spans``), or a one-line :class:`BenchmarkDataError` naming the file,
    record and field."""
    if not isinstance(record, dict):
        raise BenchmarkDataError(
            f"BABILong {where}: expected an object with fields {', '.join(FIELDS)}, got "
            f"{type(record).__name__}."
        )
    for name in FIELDS:
        value = record.get(name)
        if not isinstance(value, str) or not value.strip():
            problem = (
                "missing"
                if name not in record
                else f"not a non-empty string ({type(value).__name__})"
            )
            raise BenchmarkDataError(f"BABILong {where}: field {name!r} is {problem}.")
    out: dict[str, Any] = {name: record[name] for name in FIELDS}
    support = record.get("supporting_facts")
    if support is not None:
        if not isinstance(support, list) or not all(isinstance(f, str) for f in support):
            raise BenchmarkDataError(
                f"BABILong {where}: field 'supporting_facts' is not a list of strings."
            )
        out["supporting_facts"] = list(support)
        spans = _spans(record, support, where)
        if spans is not None:
            out["supporting_spans"] = spans
    return out


def _spans(record: dict[str, Any], support: list[str], where: str) -> list[tuple[int, int]] | None:
    """Where each supporting fact is in ``input``: the record's ``supporting_spans`` (checked), else
    each fact's only occurrence; ``None`` when a fact occurs more than once (which one supports the
    answer is not known)."""
    text, given = record["input"], record.get("supporting_spans")
    if given is None:
        starts = [text.find(f) for f in support]
        if any(a < 0 or text.count(f) != 1 for a, f in zip(starts, support, strict=True)):
            return None
        return [(a, a + len(f)) for a, f in zip(starts, support, strict=True)]
    ok = (
        isinstance(given, list)
        and len(given) == len(support)
        and all(
            isinstance(g, list)
            and len(g) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in g)
            and 0 <= g[0] <= g[1] <= len(text)  # a slice would take -3 or 10**9 as well
            and text[g[0] : g[1]] == f
            for g, f in zip(given, support)
        )
    )
    if not ok:
        raise BenchmarkDataError(
            f"BABILong {where}: field 'supporting_spans' is not one [start, end] of 'input' per "
            "supporting fact "
            f"(0 <= start <= end <= {len(text)}, the fact's text between them)."
        )
    return [(g[0], g[1]) for g in given]


def read_task(folder: Path, task: str, length: str, hub_repo: str | None) -> list[dict[str, Any]]:
    """The checked records of ``task`` at ``length``: from the files on disk, else from ``hub_repo``
    (``None``: no hub)."""
    files = task_files(folder, task, length)
    if not files:
        expected = folder / length / f"{task}.{{jsonl,json,parquet}}"
        if hub_repo is None:
            raise BenchmarkDataError(
                f"BABILong {task} at {length}: no file {expected}; see docs/benchmarks-data.md."
            )
        rows = load_from_hub(
            hub_repo, length, task, what=f"BABILong {task} at {length}", expected=expected
        )
        if not rows:
            raise BenchmarkDataError(f"BABILong {task} at {length}: {hub_repo} holds no record.")
        return [_checked(r, f"{hub_repo} {length}/{task} record {i}") for i, r in enumerate(rows)]
    out: list[dict[str, Any]] = []
    for path in files:
        try:
            rows = read_records(path)
        except (ValueError, OSError) as exc:
            raise BenchmarkDataError(
                f"BABILong {path}: unreadable ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''})."
            ) from None
        out += [_checked(r, f"{path} record {i}") for i, r in enumerate(rows)]
    if not out:
        raise BenchmarkDataError(
            f"BABILong {task} at {length}: {', '.join(map(str, files))} holds no record."
        )
    return out
