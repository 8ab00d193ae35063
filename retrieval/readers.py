"""Reading documents from files: plain text (with reStructuredText) and JSON natively, PDF and HTML
through LlamaIndex."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from longctx.retrieval.contract.document import CorpusError, Document
from longctx.retrieval.extras import require
from longctx.retrieval.paths import OutsideRoot, resolve_inside

log = logging.getLogger(__name__)

#: Read as plain text; ``.rst`` too, as LlamaIndex's ``SimpleDirectoryReader`` reads it.
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst"}
JSON_SUFFIXES = {".json", ".jsonl"}
LLAMA_SUFFIXES = {".pdf", ".html", ".htm"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | JSON_SUFFIXES | LLAMA_SUFFIXES
#: Keys looked up, in order, for the text and the title of a JSON record.
TEXT_KEYS = ("text", "content", "context", "page_content", "body")
TITLE_KEYS = ("title", "name", "doc_title")


def read_path(path: Path, *, show_progress: bool = False) -> list[Document]:
    """All documents under ``path`` (a file or a folder), in sorted path order."""
    if not path.exists():
        raise CorpusError(f"Corpus path does not exist: {path}")
    if path.is_file():
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise CorpusError(
                f"Unsupported file type {path.suffix!r} for {path}; supported: "
                f"{sorted(SUPPORTED_SUFFIXES)}"
            )
        files, root = [path], path.parent
    else:
        all_files = [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.startswith(".") and _stays_inside(path, p)
        ]
        files = [p for p in all_files if p.suffix.lower() in SUPPORTED_SUFFIXES]
        skipped = [p for p in all_files if p.suffix.lower() not in SUPPORTED_SUFFIXES]
        if skipped:
            log.warning(
                "Skipped %d file(s) under %s with unsupported types: %s",
                len(skipped),
                path,
                skipped_names(skipped, path),
            )
        if not files:
            raise CorpusError(
                f"No readable documents under {path}; supported types: {sorted(SUPPORTED_SUFFIXES)}"
            )
        root = path
    docs: list[Document] = []
    for file in tqdm(files, desc="Reading files", unit="file", disable=not show_progress):
        docs.extend(read_file(file, doc_id=str(file.relative_to(root))))
    return docs


def _stays_inside(root: Path, file: Path) -> bool:
    """Whether ``file`` (under ``root``) resolves inside ``root``; a symlink leading out is skipped
    with a warning naming it, so a corpus folder never sends text from elsewhere to the model."""
    try:
        resolve_inside(root, file.relative_to(root))
    except OutsideRoot as exc:
        log.warning(
            "Skipped %s: it is a link to %s, outside the corpus folder %s",
            file,
            exc.target,
            exc.root,
        )
        return False
    return True


def skipped_names(files: list[Path], root: Path, shown: int = 10) -> str:
    """The skipped files' paths under ``root``, the first ``shown`` of them, for the warning."""
    names = [str(p.relative_to(root)) for p in files[:shown]]
    more = len(files) - shown
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def read_file(file: Path, doc_id: str) -> Iterator[Document]:
    """Documents in one file; JSON files may hold several (ids get ``#n`` suffixes)."""
    suffix = file.suffix.lower()
    meta = {"source": str(file)}
    if suffix in TEXT_SUFFIXES:
        yield Document(doc_id=doc_id, text=_read_utf8(file), title=file.stem, metadata=meta)
    elif suffix == ".json":
        try:
            data = json.loads(_read_utf8(file))
        except json.JSONDecodeError as exc:
            raise CorpusError(f"Invalid JSON in {file}: {exc}") from exc
        records = data if isinstance(data, list) else [data]
        yield from _records(records, file, doc_id)
    elif suffix == ".jsonl":
        records = []
        for lineno, line in enumerate(_read_utf8(file).splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"Invalid JSON on line {lineno} of {file}: {exc}") from exc
        yield from _records(records, file, doc_id)
    else:
        yield _read_with_llama_index(file, doc_id)


def _read_utf8(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{file} is not valid UTF-8 (byte {exc.start}): convert it to UTF-8 first."
        ) from exc
    except OSError as exc:
        raise CorpusError(f"Cannot read {file}: {exc}") from exc


def _records(records: list[Any], file: Path, doc_id: str) -> Iterator[Document]:
    for i, rec in enumerate(records):
        rid = doc_id if len(records) == 1 else f"{doc_id}#{i}"
        if isinstance(rec, str):
            yield Document(
                doc_id=rid, text=rec, title=f"{file.stem} {i + 1}", metadata={"source": str(file)}
            )
            continue
        if not isinstance(rec, dict):
            raise CorpusError(
                f"Record {i} of {file} is a {type(rec).__name__}; expected an object or a string."
            )
        text = next((rec[k] for k in TEXT_KEYS if isinstance(rec.get(k), str)), None)
        if text is None:
            raise CorpusError(
                f"Record {i} of {file} has none of the text fields {list(TEXT_KEYS)}."
            )
        title = next((str(rec[k]) for k in TITLE_KEYS if rec.get(k)), f"{file.stem} {i + 1}")
        extra = {
            k: v
            for k, v in rec.items()
            if k not in TEXT_KEYS and isinstance(v, (str, int, float, bool))
        }
        rid = f"{doc_id}#{rec['id']}" if "id" in rec else rid
        yield Document(doc_id=rid, text=text, title=title, metadata={"source": str(file), **extra})


def _read_with_llama_index(file: Path, doc_id: str) -> Document:
    """PDF and HTML go through LlamaIndex's file readers; pages are joined in order."""
    require(
        "llama_index.readers.file", extra="readers", feature=f"reading {file.suffix.lower()} files"
    )
    from llama_index.readers.file import HTMLTagReader, PDFReader

    reader = PDFReader() if file.suffix.lower() == ".pdf" else HTMLTagReader(tag="body")
    try:
        parts = reader.load_data(file)
    except Exception as exc:  # the readers raise library-specific errors on corrupt files
        raise CorpusError(f"Cannot read {file}: {type(exc).__name__}: {exc}") from exc
    text = "\n\n".join(p.text for p in parts if p.text)
    return Document(doc_id=doc_id, text=text, title=file.stem, metadata={"source": str(file)})
