"""Adding documents to a :class:`~agents.workspace.Workspace`'s corpus: a file read again replaces
its earlier text, an unchanged one is skipped, a clashing id is renamed to its path, and an exact
copy of a document already there is dropped with a warning (``duplicates="keep"`` keeps it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.retrieval.contract import CorpusError, Document
from longctx.retrieval.duplicates import text_digest, warn_dropped


def merged(
    documents: Sequence[Document], new: Sequence[Document], duplicates: str = "drop"
) -> tuple[list[Document], list[str]]:
    """``documents`` with ``new`` added: unchanged ones skipped, a file read again (same ``source``)
    replaced, a clashing id of another file renamed to its source path (and that file, read
    again, found under its path: skipped or replaced, never refused as a clash), a new document
    whose text is already there skipped with a warning (unless ``duplicates`` is ``"keep"``).
    Returns the documents and the ids added or replaced."""
    docs = list(documents)
    where = {d.doc_id: i for i, d in enumerate(docs)}
    changed: list[str] = []
    texts = {text_digest(d.text): d.doc_id for d in docs if d.text.strip()}
    dropped: list[tuple[str, str]] = []
    for doc in new:
        source = doc.metadata.get("source")
        i = _same_file(docs, where, doc.doc_id, source)
        if i is None and source:  # renamed to its path when first added: the same file read again
            i = _same_file(docs, where, str(source), source)
        if i is not None:
            old = docs[i]
            if (old.text, old.title) != (doc.text, doc.title):
                docs[i] = (
                    doc
                    if doc.doc_id == old.doc_id
                    else Document(
                        doc_id=old.doc_id, text=doc.text, title=doc.title, metadata=doc.metadata
                    )
                )
                changed.append(old.doc_id)
            continue
        if doc.doc_id in where:
            old = docs[where[doc.doc_id]]
            if (old.text, old.title) == (doc.text, doc.title):
                continue
            if not source or str(source) in where:
                raise CorpusError(
                    f"Document id {doc.doc_id!r} is already in the corpus; give the new document "
                    "another id"
                )
            doc = Document(
                doc_id=str(source), text=doc.text, title=doc.title, metadata=doc.metadata
            )
        copied = texts.get(text_digest(doc.text)) if doc.text.strip() else None
        if copied is not None and duplicates == "drop":
            dropped.append((doc.doc_id, copied))
            continue
        texts.setdefault(text_digest(doc.text), doc.doc_id)
        where[doc.doc_id] = len(docs)
        docs.append(doc)
        changed.append(doc.doc_id)
    if dropped:
        warn_dropped(dropped, "Workspace.add")
    return docs, changed


def _same_file(
    docs: Sequence[Document], where: Mapping[str, int], doc_id: str, source: Any
) -> int | None:
    """Where the document ``doc_id`` read from ``source`` is (the same file read earlier), or
    ``None``."""
    i = where.get(doc_id)
    return (
        i
        if i is not None and source is not None and docs[i].metadata.get("source") == source
        else None
    )
