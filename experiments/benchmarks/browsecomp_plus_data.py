"""BrowseComp-Plus's files on disk: the decrypted release, the qrels and the corpus rows.

The release (830 queries) is what ``scripts_build_index/decrypt_dataset.py`` of
texttron/BrowseComp-Plus @ 97c637c writes: one JSON object a line with ``query_id``, ``query``,
``answer`` and the ``evidence_docs``, ``gold_docs`` and ``negative_docs`` lists (``docid``,
``text``, ``url``), every string decrypted. The corpus is the hub dataset
``Tevatron/browsecomp-plus-corpus`` (about 100K rows of ``docid``, ``text``, ``url``), kept as
Parquet or JSON Lines, one file or a folder of shards. The qrels (``qrel_evidence.txt``,
``qrel_golds.txt``: ``query_id Q0 docid 1``) are the repository's ``topics-qrels/``; without them
the judgements come from the release's ``evidence_docs`` / ``gold_docs``. Nothing is fetched:
:func:`missing_release` says how to get and decrypt each file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import BenchmarkDataError, read_records
from longctx.retrieval.extras import require

#: The decrypted release's file names: the README's ``--output`` first, the script's default next.
RELEASE_FILES = ("browsecomp_plus_decrypted.jsonl", "decrypted.jsonl")
#: The corpus: one file, or a folder of shards (the hub's ``data/train-*.parquet``).
CORPUS_NAMES = ("corpus.parquet", "corpus.jsonl", "corpus")
QREL_EVIDENCE = "qrel_evidence.txt"
QREL_GOLDS = "qrel_golds.txt"


@dataclass(frozen=True)
class Query:
    """One BrowseComp-Plus query: its text, gold answer and document judgements.

    Attributes:
        query_id: The release's id (a string of digits).
        query: The question.
        answer: The gold answer.
        evidence: Documents "needed to answer the query" (``qrel_evidence``).
        gold: Evidence documents that also contain the answer (``qrel_golds``).
        negatives: The release's hard negatives for the query (``negative_docs``).
    """

    query_id: str
    query: str
    answer: str
    evidence: tuple[str, ...]
    gold: tuple[str, ...]
    negatives: tuple[str, ...] = ()


def missing_release(root: Path) -> BenchmarkDataError:
    """The error for a data folder without the decrypted release: how to get and decrypt it, and
    the corpus."""
    return BenchmarkDataError(
        f"BrowseComp-Plus: no decrypted release in {root} (looked for "
        f"{' or '.join(RELEASE_FILES)}). It is published encrypted; decrypt it once with the "
        "official script (it needs the 'datasets' package and access to the hub dataset "
        "Tevatron/browsecomp-plus):\n"
        "  git clone the GitHub repository texttron/BrowseComp-Plus, then in it\n"
        f"  python scripts_build_index/decrypt_dataset.py --output {root / RELEASE_FILES[0]}\n"
        f"  cp topics-qrels/{QREL_EVIDENCE} topics-qrels/{QREL_GOLDS} {root}/\n"
        "and save the corpus (not encrypted) beside it:\n"
        '  python -c "from datasets import load_dataset; load_dataset('
        "'Tevatron/browsecomp-plus-corpus', split='train').to_parquet("
        f"'{root / CORPUS_NAMES[0]}')\"\n"
        "See docs/benchmarks-data.md (BrowseComp-Plus)."
    )


def release_file(root: Path) -> Path:
    """The decrypted release in ``root``, or :func:`missing_release`'s error."""
    for name in RELEASE_FILES:
        if (root / name).is_file():
            return root / name
    raise missing_release(root)


def corpus_files(root: Path) -> list[Path]:
    """The corpus's files in ``root`` (one file, or a folder's ``*.parquet`` / ``*.jsonl`` shards in
    name order), or an error saying how to save it."""
    for name in CORPUS_NAMES:
        path = root / name
        if path.is_file():
            return [path]
        if path.is_dir():
            shards = sorted(
                p for p in path.rglob("*") if p.suffix in (".parquet", ".jsonl") and p.is_file()
            )
            if shards:
                return shards
    raise BenchmarkDataError(
        f"BrowseComp-Plus: no corpus in {root} (looked for {', '.join(CORPUS_NAMES)}; a folder "
        "holds .parquet or .jsonl shards). Save the hub dataset Tevatron/browsecomp-plus-corpus "
        'there:\n  python -c "from datasets import load_dataset; load_dataset('
        "'Tevatron/browsecomp-plus-corpus', split='train').to_parquet("
        f"'{root / CORPUS_NAMES[0]}')\"\nSee docs/benchmarks-data.md (BrowseComp-Plus)."
    )


def _doc_ids(record: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    docs = record.get(key) or []
    if not isinstance(docs, list) or not all(isinstance(d, Mapping) and "docid" in d for d in docs):
        raise BenchmarkDataError(f"{where}: field {key!r} is not a list of {{docid, text, url}}")
    return tuple(str(d["docid"]) for d in docs)


def parse_query(record: Mapping[str, Any], where: str) -> Query:
    """One release record as a :class:`Query`, or an error naming the record and field."""
    for key in ("query_id", "query", "answer"):
        if record.get(key) in (None, ""):
            raise BenchmarkDataError(f"{where}: no {key!r} (is the release decrypted?)")
    return Query(
        query_id=str(record["query_id"]),
        query=str(record["query"]),
        answer=str(record["answer"]),
        evidence=_doc_ids(record, "evidence_docs", where),
        gold=_doc_ids(record, "gold_docs", where),
        negatives=_doc_ids(record, "negative_docs", where),
    )


def read_qrels(path: Path) -> dict[str, tuple[str, ...]]:
    """A TREC qrels file (``query_id Q0 docid relevance``) as query id -> judged documents, in file
    order."""
    judged: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise BenchmarkDataError(f"{path}, line {number}: expected 4 fields, got {len(parts)}")
        judged.setdefault(parts[0], []).append(parts[2])
    return {q: tuple(d) for q, d in judged.items()}


def read_queries(root: Path) -> list[Query]:
    """The release's queries in file order, their evidence and gold judgements from the qrels files
    in ``root`` where present (the official evaluator reads ``qrel_evidence.txt``), else from the
    release's own lists."""
    path = release_file(root)
    queries = [parse_query(r, f"{path}, record {i}") for i, r in enumerate(read_records(path), 1)]
    for name, attr in ((QREL_EVIDENCE, "evidence"), (QREL_GOLDS, "gold")):
        if (root / name).is_file():
            qrels = read_qrels(root / name)
            queries = [_with(q, attr, qrels.get(q.query_id, getattr(q, attr))) for q in queries]
    return queries


def _with(query: Query, attr: str, value: tuple[str, ...]) -> Query:
    return Query(**{**query.__dict__, attr: value})


def _parquet_rows(path: Path, columns: list[str], wanted: set[str] | None) -> Iterator[dict]:
    require("pyarrow", extra="parquet", feature=f"reading {path}")
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        for batch in handle.iter_batches(columns=columns, batch_size=4096):
            for row in batch.to_pylist():
                if wanted is None or str(row["docid"]) in wanted:
                    yield row
    except (OSError, ValueError, KeyError) as exc:
        raise BenchmarkDataError(
            f"{path} is not a readable corpus shard with columns {columns} ({exc})"
        ) from None


def _jsonl_rows(path: Path, wanted: set[str] | None) -> Iterator[dict]:
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchmarkDataError(f"{path}, line {number}: not JSON ({exc.msg})") from None
            if "docid" not in row:
                raise BenchmarkDataError(f"{path}, line {number}: no 'docid'")
            if wanted is None or str(row["docid"]) in wanted:
                yield row


def corpus_rows(
    files: Iterable[Path], *, wanted: set[str] | None = None, text: bool = True
) -> Iterator[dict[str, Any]]:
    """The corpus rows (``docid``, and ``text`` / ``url`` with ``text``) of ``files``, only those in
    ``wanted`` when given: a pass over the files that keeps in memory only what it yields."""
    columns = ["docid", "text", "url"] if text else ["docid"]
    for path in files:
        if path.suffix == ".parquet":
            yield from _parquet_rows(path, columns, wanted)
        else:
            yield from _jsonl_rows(path, wanted)


def corpus_ids(files: Iterable[Path]) -> list[str]:
    """Every document id of the corpus, in file order (Parquet: its ``docid`` column alone)."""
    return [str(r["docid"]) for r in corpus_rows(files, text=False)]
