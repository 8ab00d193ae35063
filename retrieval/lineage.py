"""Which cached index an edited or grown corpus starts from, and what changes from it.

Every index records the digest of each document it stores, segment by segment
(``documents.json``, checksummed like its other files), and in its ``meta.json`` which of
those documents are deleted. A corpus made from an indexed one by removing documents
(:meth:`Corpus.remove <retrieval.contract.Corpus.remove>`), replacing them (``update``:
delete + add) or appending them (``add``, ``rescan``) starts with live documents of that
index, in its order: :func:`find_base` finds the cached index (same chunking and retriever)
that holds the longest such start, and says which of its documents to delete. Indexes
written before documents were recorded are matched as prefixes, by fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.retrieval.checksums import Checksums
from longctx.retrieval.contract.document import IndexableCorpus

#: The digests of a segment's documents, in its folder.
DOCUMENTS_FILE = "documents.json"


@dataclass(frozen=True)
class Base:
    """A cached index an edited corpus starts from.

    Attributes:
        folder: The index's folder.
        meta: Its ``meta.json``.
        kept: The corpus's first ``kept`` documents are live documents of the index, in its order.
        deleted: Document slots (stored positions) of the index's live documents to delete: the
            ones the corpus dropped or holds again after its first ``kept`` (edited, moved).
    """

    folder: Path
    meta: dict[str, Any]
    kept: int
    deleted: tuple[int, ...]


def write_documents(folder: Path, digests: Sequence[str], checksums: Checksums) -> None:
    """Record the digests of a segment's documents in ``folder`` (hashed into ``checksums``
    as written)."""
    with checksums.open(folder / DOCUMENTS_FILE, text=True) as f:
        json.dump(list(digests), f)


def read_documents(folder: Path, segment_paths: Sequence[str]) -> list[str] | None:
    """The digests of every document slot of the index at ``folder`` (its segments in order); None
    when one segment records none."""
    digests: list[str] = []
    for path in segment_paths:
        try:
            with open(folder / path / DOCUMENTS_FILE, encoding="utf-8") as f:
                part = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(part, list):
            return None
        digests.extend(str(d) for d in part)
    return digests


def match(
    corpus_digests: Sequence[str], slots: Sequence[str], deleted: set[int]
) -> tuple[int, list[int]]:
    """How many first documents of a corpus are live slots of an index in its order, and which live
    slots the corpus drops.

    Document ids are unique within a corpus, and a digest holds the id, so each digest names
    at most one slot. Matching stops at the first document that is not a later live slot.
    """
    where = {d: s for s, d in enumerate(slots) if s not in deleted}
    kept, last, matched = 0, -1, set()
    for digest in corpus_digests:
        slot = where.get(digest)
        if slot is None or slot < last:
            break
        matched.add(slot)
        kept, last = kept + 1, slot
    return kept, [s for s in sorted(where.values()) if s not in matched]


def find_base(
    corpus: IndexableCorpus, candidates: Sequence[tuple[Path, dict[str, Any], list[str]]]
) -> Base | None:
    """The candidate index (``(folder, meta, segment paths)``, same chunking and retriever) the
    corpus best starts from.

    Best: most documents kept, then fewest deleted. None when no candidate shares a first
    document with the corpus, or when one is the corpus itself (nothing to derive).
    """
    best: Base | None = None
    for folder, meta, paths in candidates:
        slots = read_documents(folder, paths)
        deleted = set(meta.get("deleted_documents") or [])
        if slots is None:  # written before documents were recorded: a prefix, by fingerprint
            n = meta.get("num_documents")
            if (
                deleted
                or not isinstance(n, int)
                or not 0 < n < len(corpus)
                or corpus.prefix_fingerprint(n) != meta.get("corpus_fingerprint")
            ):
                continue
            kept, drop = n, list[int]()
        else:
            kept, drop = match(corpus.document_digests, slots, deleted)
        if kept == 0 or (kept == len(corpus) and not drop):
            continue
        if best is None or (kept, -len(drop)) > (best.kept, -len(best.deleted)):
            best = Base(folder, meta, kept, tuple(drop))
    return best
