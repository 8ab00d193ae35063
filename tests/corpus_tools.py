"""Two deterministic tools over a two-document corpus, for the tool-loop tests: ``search`` (the ids
of the documents holding a word of the query) and ``get_document`` (a document's text; an unknown id
raises ``KeyError``, which the loop returns to the model as a tool error)."""

from __future__ import annotations

from langchain_core.tools import tool

DOCS = {"d1": "Paris is the capital of France.", "d2": "Lyon is a city in France."}


@tool
def search(query: str) -> str:
    """Search the corpus; returns the ids of the matching documents."""
    return ", ".join(k for k, v in DOCS.items() if any(w in v for w in query.split())) or "none"


@tool
def get_document(doc_id: str) -> str:
    """The text of one document."""
    return DOCS[doc_id]  # KeyError for an unknown id: a tool error
