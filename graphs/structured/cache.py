"""Extracted records on disk, per (document fingerprint, schema, model): reused by later
questions and runs, and the Map stage's checkpoint (a killed run re-reads only the
documents it had not finished).

Layout: ``<cache_dir>/structured/records/<schema hash[:16]>/<model hash[:12]>/<fp[:2]>/<fp>.json``
and ``<cache_dir>/structured/schemas/<corpus fingerprint[:32]>.json`` (the schemas used on
a corpus, so a later question reuses one that covers it).

Concurrency: a file is written to a temporary name unique to its process and thread, in its
own folder, and moved into place with ``os.replace``: a reader sees the old file or the new
one, never a torn one, and two writers of one key (same document, schema and model: the
same records) leave one complete file. A file that does not parse or does not belong to
its key is named in a warning, moved aside as ``<name>.corrupt-<timestamp>`` and
re-extracted. That a document is extracted once across questions and processes is the
single flight's work (:mod:`graphs.structured.flight`, whose ``.flights.lock`` lives in the
records folder).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from retrieval.contract import Document
from retrieval.locks import exclusive_lock

log = logging.getLogger(__name__)

CACHE_VERSION = 1


def document_fingerprint(doc: Document) -> str:
    """SHA-256 over a document's title and text (its id does not change what it says)."""
    h = hashlib.sha256()
    for part in (doc.title, doc.text):
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _short(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


_MADE: set[str] = set()
_MADE_LOCK = threading.Lock()


def _write_file(tmp: str, data: bytes) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` via a temporary file and ``os.replace``.

    No lock is needed: the temporary name is unique to the writing process and thread, it is
    written in one synchronous call, and ``os.replace`` is atomic, so a reader sees the old
    file or the new one and two writers of one key leave one complete file. Folders made
    once are remembered (one ``mkdir`` per folder and process, not per file).
    """
    parent = str(path.parent)
    if parent not in _MADE:
        os.makedirs(parent, exist_ok=True)
        with _MADE_LOCK:
            _MADE.add(parent)
    tmp = f"{parent}/.{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    body = json.dumps(data, ensure_ascii=False).encode("utf-8")
    try:
        _write_file(tmp, body)
    except FileNotFoundError:  # the folder was removed since it was made
        os.makedirs(parent, exist_ok=True)
        _write_file(tmp, body)
    os.replace(tmp, path)


def _quarantine(path: Path, why: str) -> None:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    log.warning("Structured record cache file %s is unusable (%s); moved aside as %s and extracted again", path, why, aside.name)
    try:
        os.replace(path, aside)
    except OSError:
        pass


class RecordCache:
    """The records of one (schema, model) pair, one JSON file per document fingerprint."""

    def __init__(self, root: str | Path, schema_key: str, model: str):
        self.schema_key = schema_key
        self.model = model
        self.folder = Path(root) / "structured" / "records" / schema_key[:16] / _short(model, 12)

    def path(self, fingerprint: str) -> Path:
        """Where a document's records live."""
        return self.folder / fingerprint[:2] / f"{fingerprint}.json"

    def get(self, fingerprint: str) -> dict[str, Any] | None:
        """The cached extraction of a document, or ``None`` (missing, or corrupt and moved aside)."""
        path = self.path(fingerprint)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            _quarantine(path, f"{type(exc).__name__}: {exc}")
            return None
        ok = (
            isinstance(data, dict) and data.get("version") == CACHE_VERSION and data.get("fingerprint") == fingerprint
            and data.get("schema") == self.schema_key and isinstance(data.get("records"), list)
        )
        if not ok:
            _quarantine(path, "not a record file of this document and schema")
            return None
        return data

    def put(self, fingerprint: str, records: list[dict], **facts: Any) -> None:
        """Store a document's records (only complete extractions are stored)."""
        payload = {"version": CACHE_VERSION, "fingerprint": fingerprint, "schema": self.schema_key, "model": self.model, "records": records, **facts}
        atomic_write_json(self.path(fingerprint), payload)


class SchemaStore:
    """The schemas used on one corpus, so a later question reuses one that covers it."""

    def __init__(self, root: str | Path, corpus_fingerprint: str):
        self.path = Path(root) / "structured" / "schemas" / f"{corpus_fingerprint[:32]}.json"

    def load(self) -> list[dict[str, Any]]:
        """The stored schemas (oldest first); an unreadable file counts as empty and is moved aside."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            _quarantine(self.path, f"{type(exc).__name__}: {exc}")
            return []
        return data if isinstance(data, list) else []

    def add(self, schema: dict[str, Any]) -> None:
        """Remember ``schema`` (read-modify-write under the folder's lock)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.path.parent / ".schemas.lock", what="structured schema store"):
            known = self.load()
            if schema not in known:
                known.append(schema)
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(json.dumps(known, ensure_ascii=False), encoding="utf-8")
                os.replace(tmp, self.path)


__all__ = ["CACHE_VERSION", "RecordCache", "SchemaStore", "atomic_write_json", "document_fingerprint"]
