"""Checksums of an index's files: computed while each file is written, verified when it is loaded.

A same-size corruption (flipped bytes in a BM25 matrix, garbled vector bytes, an edited
chunk or vocabulary) leaves every file readable and every count right, so only a digest
of the bytes catches it. The digest is XXH3-128 (``xxhash``, a dependency of LangGraph):
about 11 GB/s on one core here, against about 1 GB/s for ``blake2b`` or ``sha256``, so
verifying a 10M-token index costs milliseconds. It guards against accidents (disk,
copy, editor), not against an attacker, who could rewrite ``meta.json`` as well.

The embedding shards of an unfinished dense build are checked by the same rule, each
against the record written beside it (:mod:`longctx.retrieval.dense`).
"""

from __future__ import annotations

import io
import mmap
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from longctx.retrieval.contract.errors import DataError

if TYPE_CHECKING:
    from _typeshed import (
        ReadableBuffer,
    )  # bytes, bytearray, memoryview, ...: what a binary file takes

#: The digest recorded in ``meta.json``; a different name there means "written by another version".
ALGORITHM = "xxh3_128"
_BLOCK = 1 << 20
#: Map every page at once where the OS can (Linux): 10-15% faster to hash than
#: faulting them in one by one.
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
#: Bytes of a file mapped at once while it is hashed (a multiple of the mapping granularity): a
#: whole mapped 70 MB BM25 matrix was resident on top of the index being built.
_WINDOW = 1 << 22


class ChecksumMismatch(DataError):
    """A file of an index is missing, of another size, or holds other bytes than were written."""


class _HashingWriter(io.RawIOBase):
    """A binary file that hashes every byte on its way to disk."""

    def __init__(self, path: Path):
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self.hash = xxhash.xxh3_128()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data).cast("B")
        self.hash.update(view)
        self.size += len(view)
        self._file.write(view)
        return len(view)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self.closed:
            super().close()  # flushes first
            self._file.close()


def digest_bytes(data: bytes) -> str:
    """The recorded digest of ``data`` (hex)."""
    return xxhash.xxh3_128_hexdigest(data)


def digest_texts(texts: Iterable[str]) -> str:
    """The digest of a sequence of strings (each UTF-8, length-prefixed, so boundaries count): what
    a file was computed from, recorded beside it so that it is not reused for other inputs."""
    h = xxhash.xxh3_128()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def digest_file(path: Path) -> tuple[int, str]:
    """``(size, digest)`` of a file on disk, hashed straight from its memory map (no copy out of the
    page cache), :data:`_WINDOW` bytes mapped at a time, so that hashing a large file adds at most
    that to the resident set."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h = xxhash.xxh3_128()
        for offset in range(0, size, _WINDOW):
            with mmap.mmap(
                f.fileno(),
                min(_WINDOW, size - offset),
                flags=_MAP_FLAGS,
                prot=mmap.PROT_READ,
                offset=offset,
            ) as mapped:
                h.update(mapped)
        return size, h.hexdigest()


class Checksums:
    """The size and digest of each file written into ``folder``, by its path relative to it
    (``/``-separated)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.files: dict[str, dict[str, Any]] = {}

    def _name(self, path: Path) -> str:
        return Path(path).relative_to(self.folder).as_posix()

    @contextmanager
    def open(
        self, path: Path, *, text: bool = False, record_as: str | None = None
    ) -> Iterator[Any]:
        """A new file at ``path`` (inside the folder) whose digest is recorded as it is written.

        Binary by default; ``text=True`` gives a UTF-8 text file. The digest is recorded
        once the file is closed without error, under ``record_as`` when given (a file
        written under a temporary name and renamed into place afterwards).
        """
        raw = _HashingWriter(path)
        f: Any = io.BufferedWriter(raw, buffer_size=_BLOCK)
        if text:
            f = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
        with f:
            yield f
        self.files[record_as or self._name(path)] = {
            "bytes": raw.size,
            ALGORITHM: raw.hash.hexdigest(),
        }

    def add_unrecorded(self, skip_prefix: str | None = None) -> list[str]:
        """Hash, from disk, every file in the folder not written through :meth:`open` (files a
        third-party library wrote itself, such as bm25s's), but those whose path starts with
        ``skip_prefix``; returns their names."""
        added = []
        for root, _dirs, names in os.walk(self.folder):
            for n in sorted(names):
                path = Path(root) / n
                name = self._name(path)
                if name not in self.files and not (skip_prefix and name.startswith(skip_prefix)):
                    size, digest = digest_file(path)
                    self.files[name] = {"bytes": size, ALGORITHM: digest}
                    added.append(name)
        return added

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """``{relative path: {"bytes": n, "xxh3_128": hex}}``, sorted by path, for ``meta.json``."""
        return dict(sorted(self.files.items()))


def expected(recorded: Any, name: str, *, where: str = "meta.json") -> tuple[int, str]:
    """The recorded ``(size, digest)`` of ``name``; :class:`ChecksumMismatch` when ``where`` (the
    file holding the records, for the message) records none."""
    entry = recorded.get(name) if isinstance(recorded, dict) else None
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get(ALGORITHM), str)
        or not isinstance(entry.get("bytes"), int)
    ):
        raise ChecksumMismatch(f"{where} records no {ALGORITHM} checksum for {name}")
    return entry["bytes"], entry[ALGORITHM]


def check(name: str, recorded: Any, size: int, digest: str, *, where: str = "meta.json") -> None:
    """Raise :class:`ChecksumMismatch` naming ``name`` unless ``size`` and ``digest`` are the
    recorded ones."""
    want_size, want_digest = expected(recorded, name, where=where)
    if size != want_size:
        raise ChecksumMismatch(f"{name} holds {size} bytes, {where} records {want_size}")
    if digest != want_digest:
        raise ChecksumMismatch(f"{name} fails its {ALGORITHM} checksum (same size, other bytes)")


def verify_file(folder: Path, name: str, recorded: Any, *, where: str = "meta.json") -> None:
    """Check one file of ``folder`` against its recorded size and digest (recorded in ``where``)."""
    want_size, _ = expected(recorded, name, where=where)
    path = Path(folder) / name
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ChecksumMismatch(f"{name} is missing") from None
    if size != want_size:
        raise ChecksumMismatch(f"{name} holds {size} bytes, {where} records {want_size}")
    check(name, recorded, *digest_file(path), where=where)


def verify_folder(folder: Path, recorded: Any) -> None:
    """Check every file recorded for ``folder``; :class:`ChecksumMismatch` names the first
    that differs."""
    if not isinstance(recorded, dict) or not recorded:
        raise ChecksumMismatch("meta.json records no file checksums (written before they existed)")
    for name in sorted(recorded):
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ChecksumMismatch(f"meta.json records a file outside the index: {name!r}")
        verify_file(folder, name, recorded)
