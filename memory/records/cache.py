"""Extracted records on disk, per (document fingerprint, schema, model): reused by later
questions and runs, and the Map stage's checkpoint (a killed run re-reads only the
documents it had not finished).

Layout under a store folder ``<root>`` (the structured strategy's is ``<cache_dir>/structured``):
``<root>/records/<schema hash[:16]>/<model hash[:12]>/records.jsonl``, one line per
extracted document (``<fingerprint>\t<JSON>``; the last line of a fingerprint wins), and
``<root>/schemas/<corpus fingerprint[:32]>.json`` (the schemas used on a corpus, so a later
question reuses one that covers it).

One append-only log per (schema, model) rather than one file per document: storing a
document is one ``write`` of one line (no file to create, no rename, no folder per
fingerprint prefix: at 10M tokens, 2,500 files and 256 folders fewer per schema), and a
question's ``map`` reads the log once instead of opening a file per document.

Concurrency: every process appends through its own ``O_APPEND`` descriptor, one ``write``
per line, so lines from threads and processes never interleave on a local file system
(appends to a network file system are not atomic: keep the cache on a local disk). Each
process indexes the log (fingerprint -> offset and length) and reads what others appended
since, incrementally. A line that does not parse or does not belong to its key (a torn
write of a killed process) is named in a warning and skipped: its document is extracted
again and a new line supersedes it. That a document is extracted once across questions
and processes is the work of the caller's single flight (the structured strategy's, whose
``.flights.lock`` lives in the same folder).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from longctx.retrieval.contract import Document
from longctx.retrieval.locks import exclusive_lock

log = logging.getLogger(__name__)

CACHE_VERSION = 2  # 2: one append-only log per (schema, model); 1: a file per document (not read)


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


_SET_ASIDE = itertools.count(1)


def _quarantine(path: Path, why: str, then: str) -> None:
    """Move an unusable cache file aside (``<name>.corrupt-<time>-<pid>-<n>``: two in one second of
    one process keep both), saying why and what follows."""
    aside = path.with_name(
        f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_SET_ASIDE)}"
    )
    log.warning(
        "Structured cache file %s is unusable (%s); moved aside as %s; %s",
        path,
        why,
        aside.name,
        then,
    )
    try:
        os.replace(path, aside)
    except OSError:
        pass


LOG_NAME = "records.jsonl"


class RecordLog:
    """One process's view of a record log: an index of the lines read so far, and an append
    descriptor."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        self.index: dict[str, tuple[int, int]] = {}  # fingerprint -> (offset, length) of its JSON
        self.end = 0  # bytes indexed (complete lines only)
        self.inode: tuple[int, int] | None = None
        self.read_fd: int | None = None
        self.append_fd: int | None = None

    def _reset(self) -> None:
        for fd in (self.read_fd, self.append_fd):
            if fd is not None:
                os.close(fd)
        self.index, self.end, self.inode, self.read_fd, self.append_fd = {}, 0, None, None, None

    def refresh(self) -> None:
        """Index the lines appended since the last look (by any process)."""
        with self.lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                if self.inode is not None:
                    self._reset()
                return
            if self.inode is not None and (
                self.inode != (st.st_dev, st.st_ino) or st.st_size < self.end
            ):
                self._reset()  # replaced or truncated under us: index it again
            if self.read_fd is None:
                self.read_fd = os.open(self.path, os.O_RDONLY)
                fst = os.fstat(self.read_fd)
                self.inode = (fst.st_dev, fst.st_ino)
            size = os.fstat(self.read_fd).st_size
            if size <= self.end:
                return
            data = os.pread(self.read_fd, size - self.end, self.end)
            start = 0
            while True:
                newline = data.find(b"\n", start)
                if newline < 0:
                    break  # an incomplete last line: read again next time
                tab = data.find(b"\t", start, newline)
                if tab > start:
                    fingerprint = data[start:tab].decode("ascii", errors="replace")
                    self.index[fingerprint] = (self.end + tab + 1, newline - tab - 1)
                elif newline > start:
                    log.warning(
                        "Structured record log %s has an unreadable line at byte %d; skipped",
                        self.path,
                        self.end + start,
                    )
                start = newline + 1
            self.end += start

    def read(self, fingerprint: str) -> bytes | None:
        """The JSON of a fingerprint's last indexed line, or ``None``."""
        with self.lock:
            where = self.index.get(fingerprint)
            if where is None or self.read_fd is None:
                return None
            return os.pread(self.read_fd, where[1], where[0])

    def forget(self, fingerprint: str) -> None:
        """Drop an unusable line from the index (a later line of the fingerprint supersedes it)."""
        with self.lock:
            self.index.pop(fingerprint, None)

    def append(self, fingerprint: str, body: bytes) -> None:
        """Add one line in one ``write`` (atomic among appenders on a local file system)."""
        line = fingerprint.encode("ascii") + b"\t" + body + b"\n"
        # held through the write: a refresh that finds the file replaced closes the descriptor
        with self.lock:
            if self.append_fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.append_fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                # a line torn by a kill: end it, else this line is glued to it and lost
                if _ends_mid_line(self.append_fd):
                    log.warning(
                        "Record log %s ends in the middle of a line (a write cut short by a kill "
                        "or a full disk): that record is asked again, and the log goes on from a "
                        "new line",
                        self.path,
                    )
                    line = b"\n" + line
            written = os.write(self.append_fd, line)
        if written != len(line):  # a regular file takes the whole line unless the disk is full
            raise OSError(f"short write to {self.path} ({written} of {len(line)} bytes)")


def _ends_mid_line(fd: int) -> bool:
    """Whether the file ends without a newline: its last line was torn (appenders write whole
    lines)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


_LOGS: dict[str, RecordLog] = {}
_LOGS_LOCK = threading.Lock()


def record_log(path: Path) -> RecordLog:
    """The process's one :class:`RecordLog` of ``path``."""
    key = str(path.absolute())
    with _LOGS_LOCK:
        found = _LOGS.get(key)
        if found is None:
            found = _LOGS[key] = RecordLog(Path(key))
        return found


class RecordCache:
    """The records of one (schema, model) pair under the store folder ``root``: one log line per
    document fingerprint."""

    def __init__(self, root: str | Path, schema_key: str, model: str):
        self.schema_key = schema_key
        self.model = model
        self.folder = Path(root) / "records" / schema_key[:16] / _short(model, 12)
        self.log = record_log(self.folder / LOG_NAME)

    @property
    def path(self) -> Path:
        """The log file."""
        return self.log.path

    def refresh(self) -> None:
        """Read what was appended since the last look (``get(..., refresh=False)`` then skips
        it)."""
        self.log.refresh()

    def get(self, fingerprint: str, *, refresh: bool = True) -> dict[str, Any] | None:
        """The cached extraction of a document, or ``None`` (missing, or unusable: warned about and
        skipped)."""
        if refresh:
            self.log.refresh()
        raw = self.log.read(fingerprint)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            self._unusable(fingerprint, f"{type(exc).__name__}: {exc}")
            return None
        ok = (
            isinstance(data, dict)
            and data.get("version") == CACHE_VERSION
            and data.get("fingerprint") == fingerprint
            and data.get("schema") == self.schema_key
            and isinstance(data.get("records"), list)
        )
        if not ok:
            self._unusable(fingerprint, "not a record line of this document and schema")
            return None
        found: dict[str, Any] = data
        return found

    def _unusable(self, fingerprint: str, why: str) -> None:
        log.warning(
            "Structured record log %s: the line of document %s is unusable (%s); skipped and "
            "extracted again",
            self.path,
            fingerprint[:16],
            why,
        )
        self.log.forget(fingerprint)

    def put(self, fingerprint: str, records: list[dict[str, Any]], **facts: Any) -> None:
        """Store a document's records (only complete extractions are stored)."""
        payload = {
            "version": CACHE_VERSION,
            "fingerprint": fingerprint,
            "schema": self.schema_key,
            "model": self.model,
            "records": records,
            **facts,
        }
        self.log.append(fingerprint, json.dumps(payload, ensure_ascii=False).encode("utf-8"))


class SchemaStore:
    """The schemas used on one corpus (under the store folder ``root``), so a later question reuses
    one that covers it.

    Readers take no lock: the file is only ever replaced whole (``os.replace``), so a reader
    sees the old list or the new one. A writer reads, adds and replaces under the folder's
    lock, and only a writer moves an unreadable file aside: a reader doing it could move
    aside the good file a writer had just put in its place. Under the lock a writer also
    removes the temporary files of writers killed before their ``os.replace``.
    """

    def __init__(self, root: str | Path, corpus_fingerprint: str):
        self.path = Path(root) / "schemas" / f"{corpus_fingerprint[:32]}.json"

    def _read(self) -> list[dict[str, Any]]:
        """The stored list; ``FileNotFoundError`` when there is none, ``ValueError``/``OSError``
        when unreadable."""
        data = json.loads(self.path.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"a JSON {type(data).__name__}, not a list of schemas")
        return data

    def load(self) -> list[dict[str, Any]]:
        """The stored schemas (oldest first); an unreadable file reads as none (the next :meth:`add`
        sets it aside)."""
        try:
            return self._read()
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning(
                "Structured schema store %s is unreadable (%s); no earlier schema is reused",
                self.path,
                f"{type(exc).__name__}: {exc}",
            )
            return []

    def add(self, schema: dict[str, Any]) -> None:
        """Remember ``schema`` (read-modify-write under the folder's lock)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.path.parent / ".schemas.lock", what="structured schema store"):
            # no writer is active: these are killed writers'
            for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
                stale.unlink(missing_ok=True)
            try:
                known = self._read()
            except FileNotFoundError:
                known = []
            except (OSError, ValueError) as exc:
                _quarantine(
                    self.path,
                    f"{type(exc).__name__}: {exc}",
                    "the schemas it held are planned again when asked",
                )
                known = []
            if schema not in known:
                known.append(schema)
                atomic_write_json(self.path, known)


__all__ = [
    "CACHE_VERSION",
    "LOG_NAME",
    "RecordCache",
    "RecordLog",
    "SchemaStore",
    "atomic_write_json",
    "document_fingerprint",
]
