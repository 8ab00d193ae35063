"""OOLONG's released files, found on disk and read a row at a time.

The hub datasets (read with ``load_dataset`` by ``eval_script_batched.py``):

- ``oolongbench/oolong-synth``: Parquet shards ``data/{test,validation}-*.parquet`` (5,200 and
  1,300 rows, 24 GB with every window's text stored once per question); fields ``id``,
  ``context_len``, ``dataset`` (the source: ``spam``, ``trec_coarse``...), ``context_window_text``,
  ``context_window_text_with_labels``, ``question``, ``task_group`` (``counting``, ``user``,
  ``timeline``), ``task``, ``answer`` (a Python list literal), ``answer_type``, ``input_subset``,
  ``num_labels``, ``context_window_id``.
- ``oolongbench/oolong-real``: JSON Lines per config and split, ``{dnd,toy_dnd}/{test,validation}
  .jsonl``; fields ``id``, ``context_window_id``, ``context_window_text``, ``question``,
  ``answer`` (an int or a string), ``question_type``, ``episodes``, ``campaign``. It has no
  ``context_len``: the official script counts it with the evaluated model's tokenizer.

Under the data folder (``$LONGCTX_DATA_DIR/oolong``) a variant's files are found in its folder,
``synth/`` or ``oolong-synth/`` (``real/`` or ``oolong-real/``, with the config as a sub-folder):
``<split>.{jsonl,json,parquet}`` or the hub's ``data/<split>-*.parquet`` shards (a copy of the hub
repository works as is). Parquet is read a record batch at a time with the context-length filter
pushed into the reader, so a 128K selection never holds the 4M-token windows. With ``hub=True`` a
split not on disk comes through ``datasets`` (the ``hub`` extra); nothing is fetched otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BenchmarkDataError,
    find_file,
    load_from_hub,
)
from longctx.retrieval.extras import install_hint, require

HUB_REPOS = {"synth": "oolongbench/oolong-synth", "real": "oolongbench/oolong-real"}
FOLDERS = {"synth": ("synth", "oolong-synth"), "real": ("real", "oolong-real")}
SPLITS = ("test", "validation")
#: OOLONG-real's hub configs: the benchmark, and a few items per question type.
REAL_CONFIGS = ("dnd", "toy_dnd")
FIELDS = {
    "synth": (
        "id",
        "context_window_id",
        "context_window_text",
        "question",
        "answer",
        "answer_type",
        "task_group",
        "task",
        "dataset",
        "context_len",
    ),
    "real": ("id", "context_window_id", "context_window_text", "question", "answer"),
}
_BATCH_ROWS = 16


def variant_files(root: Path, variant: str, split: str, config: str | None) -> list[Path]:
    """The local files holding ``variant``'s ``split`` (module docstring), or ``[]``."""
    for name in FOLDERS[variant]:
        folder = root / name / config if config else root / name
        single = find_file(folder, split)
        if single is not None:
            return [single]
        shards = sorted((folder / "data").glob(f"{split}-*.parquet")) if folder.is_dir() else []
        if shards:
            return shards
    return []


def missing(root: Path, variant: str, split: str, config: str | None) -> BenchmarkDataError:
    """The error for a variant not on disk: where to put it and how to get it."""
    folder = root / FOLDERS[variant][1] / (config or "")
    get = (
        f"hf download {HUB_REPOS[variant]} --repo-type dataset --local-dir "
        f"{root / FOLDERS[variant][1]}"
    )
    return BenchmarkDataError(
        f"OOLONG-{variant} {split}: no files under {folder} (nor {root / FOLDERS[variant][0]}). "
        f"Get the release with `{get}` (the hub dataset {HUB_REPOS[variant]}), or load with "
        f"hub=True and the 'hub' extra ({install_hint('hub')}); see docs/benchmarks-data.md."
    )


def _parquet_rows(
    path: Path, lengths: tuple[int, int | None] | None, skip: str | None
) -> Iterator[dict[str, Any]]:
    require("pyarrow", extra="parquet", feature=f"reading {path}")
    import pyarrow.dataset as ds

    try:
        data = ds.dataset(path, format="parquet")
        columns = [n for n in data.schema.names if n != skip]
        where = None
        if lengths is not None and "context_len" in data.schema.names:
            where = ds.field("context_len") > lengths[0]
            if lengths[1] is not None:
                where = where & (ds.field("context_len") <= lengths[1])
        for batch in data.to_batches(columns=columns, filter=where, batch_size=_BATCH_ROWS):
            yield from batch.to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise BenchmarkDataError(
            f"{path} is not a readable Parquet file ({' '.join(str(exc).split())[:200]})"
        ) from None


def _json_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            yield from data["data"] if isinstance(data, dict) else data
            return
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise BenchmarkDataError(
                            f"{path}, line {number}: not JSON ({exc.msg})"
                        ) from None
    except UnicodeDecodeError as exc:
        raise BenchmarkDataError(f"{path} is not UTF-8 text ({exc.reason})") from None


def rows(
    root: Path,
    variant: str,
    split: str,
    *,
    config: str | None = None,
    hub: bool = False,
    lengths: tuple[int, int | None] | None = None,
    skip: str | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` of one variant's split in file order; ``lengths`` ``(min, max)`` keeps
    ``min < context_len <= max`` where the file has the field (Parquet filters while reading);
    ``skip`` names a column Parquet need not read (the window text not asked for)."""
    files = variant_files(root, variant, split, config)
    if not files:
        if not hub:
            raise missing(root, variant, split, config)
        expected = root / FOLDERS[variant][1] / (config or "") / f"{split}.jsonl"
        found = load_from_hub(
            HUB_REPOS[variant], config, split, what=f"OOLONG-{variant}", expected=expected
        )
        yield from ((f"{HUB_REPOS[variant]} {split} row {i}", r) for i, r in enumerate(found))
        return
    for path in files:
        read = _parquet_rows(path, lengths, skip) if path.suffix == ".parquet" else _json_rows(path)
        yield from ((f"{path} row {i}", r) for i, r in enumerate(read))


def checked(
    row: Any, variant: str, where: str, *, labels: bool, window_seen: bool = False
) -> dict[str, Any]:
    """``row`` if it has the fields the benchmark reads, else a one-line error naming the field.

    With ``window_seen`` (a row of a window read before) the window's text may be left out, as
    ``longctx.experiments.oolong_gen`` writes it after a window's first question."""
    if not isinstance(row, dict):
        raise BenchmarkDataError(f"OOLONG-{variant} {where}: not an object.")
    need = FIELDS[variant]
    if labels:  # the labelled text instead of the plain one
        need = (*(n for n in need if n != "context_window_text"), "context_window_text_with_labels")
    if window_seen:
        need = tuple(n for n in need if not n.startswith("context_window_text"))
    for name in need:
        if row.get(name) is None:
            raise BenchmarkDataError(f"OOLONG-{variant} {where}: field {name!r} is missing.")
    text = row.get("context_window_text_with_labels" if labels else "context_window_text")
    if not isinstance(text, str | None) or not isinstance(row["question"], str):
        raise BenchmarkDataError(
            f"OOLONG-{variant} {where}: the window's text and 'question' must be strings."
        )
    return row
