"""Exact duplicate documents in a corpus the user builds from their own files or strings.

Three copies of one file cost three times the indexing and, worse, retrieval spends its slots on
them (RAG's top 7 held a document and its copy twice). ``Corpus.from_path``, ``Corpus.from_texts``,
``Corpus.rescan`` and ``Workspace`` therefore drop a document whose text equals an earlier one's
(``duplicates="drop"``, the default), with one warning naming each dropped document and the one it
copies; ``duplicates="keep"`` keeps them all, silently. Benchmark loaders build their corpora with
``Corpus(...)`` / ``Corpus.from_documents``, which never drop anything: a benchmark's official input
stays as it is, duplicates included.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Literal

from longctx.retrieval.contract.document import Document, hash_text
from longctx.retrieval.contract.errors import ConfigError

log = logging.getLogger(__name__)

#: What to do with a document whose text equals an earlier document's.
Duplicates = Literal["drop", "keep"]
#: Dropped documents named in the warning (the rest are counted).
SHOWN = 10


def checked_duplicates(duplicates: str) -> Duplicates:
    """``duplicates`` if it is ``"drop"`` or ``"keep"``; otherwise a one-line ``ConfigError``."""
    if duplicates not in ("drop", "keep"):
        raise ConfigError(f"duplicates must be 'drop' or 'keep', got {duplicates!r}")
    return "drop" if duplicates == "drop" else "keep"


def text_digest(text: str) -> str:
    """SHA-256 of a document's text: equal digests, equal texts (the title and id are
    not compared)."""
    h = hashlib.sha256()
    hash_text(h, text)  # a slice at a time: no whole copy of a huge text
    return h.hexdigest()


def without_duplicates(
    documents: Sequence[Document], duplicates: str = "drop", *, where: str = "the corpus"
) -> list[Document]:
    """``documents`` less each one whose text equals an earlier one's (kept in order; blank texts
    are left alone), with a warning naming them; all of them when ``duplicates`` is ``"keep"``."""
    if checked_duplicates(duplicates) == "keep":
        return list(documents)
    first: dict[str, str] = {}
    kept: list[Document] = []
    dropped: list[tuple[str, str]] = []
    for doc in documents:
        if not doc.text.strip():
            kept.append(doc)
            continue
        original = first.setdefault(text_digest(doc.text), doc.doc_id)
        if original == doc.doc_id:
            kept.append(doc)
        else:
            dropped.append((doc.doc_id, original))
    if dropped:
        warn_dropped(dropped, where)
    return kept


def warn_dropped(dropped: Sequence[tuple[str, str]], where: str) -> None:
    """One warning naming the dropped documents (``(id, id of the document it copies)`` pairs)."""
    names = ", ".join(f"{d!r} (= {o!r})" for d, o in dropped[:SHOWN])
    more = f" and {len(dropped) - SHOWN} more" if len(dropped) > SHOWN else ""
    log.warning(
        "%s: %d exact duplicate document(s) dropped, the same text as an earlier one: %s%s; "
        "pass duplicates='keep' to keep them",
        where,
        len(dropped),
        names,
        more,
    )
