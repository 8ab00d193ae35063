"""BrowseComp-Plus's two tools, ``search`` and ``get_document``, as the official search agent
defines them (texttron/BrowseComp-Plus @ 97c637c ``search_agent/openai_client.py``
``SearchToolHandler``; ``searcher/searchers/base.py`` for the descriptions), written here:

- the schemas: the official ones, in the Chat Completions shape (``{"type": "function",
  "function": {...}}``) where the official client sends the Responses shape (the same name,
  description, parameters and ``strict``; :func:`responses_tool_definitions` is the official
  shape, which the parity test compares);
- ``search``: the ``k`` best documents for the query, each ``{"docid", "score", "snippet"}``
  (``score`` left out when the searcher gives none), the snippet the document's text cut to its
  first ``snippet_max_tokens`` tokens (encoded without special tokens, decoded skipping them),
  as JSON indented by 2;
- ``get_document``: ``{"docid", "text"}`` as JSON indented by 2, or
  ``{"error": "Document with docid '<id>' not found"}``;
- a tool that fails (unreadable arguments, a missing argument, an unknown tool) answers
  ``Error executing <name>: <error>``, as the official loop does.

The searcher is any object with ``search(query, k)`` (candidates ``{"docid", "score", "text"}``)
and ``get_document(docid)``: :class:`CorpusSearcher` runs our retrievers over a corpus.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from longctx.graphs.plugin.api import (
    BudgetReached,
    Corpus,
    Hit,
    Index,
    RetrievalService,
    decode,
    encode,
    encode_segments,
)
from longctx.graphs.search_agent.prompts import (
    DOCID_PARAMETER_DESCRIPTION,
    GET_DOCUMENT_DESCRIPTION,
    QUERY_PARAMETER_DESCRIPTION,
    SEARCH_DESCRIPTION,
)

#: Our default snippet tokenizer: cl100k (the official one, ``Qwen/Qwen3-0.6B``, needs its
#: tokenizer files; name it, or a local folder of it, in ``snippet_tokenizer``).
CL100K = "cl100k"


class SnippetTokenizer(Protocol):
    """What the snippet rule needs of a tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class Cl100k:
    """cl100k (:mod:`longctx.retrieval.tokens`): special-token strings are ordinary text, so
    encoding adds no special token and decoding has none to skip."""

    def encode(self, text: str) -> list[int]:
        return encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return decode(ids)

    def encode_prefix(self, text: str, n: int) -> list[int]:
        """The first ``n + 1`` token ids of ``text`` (all, when it has fewer), the same as
        ``encode(text)[: n + 1]``, encoding only the start of a long text (pieces cut where the
        tokens do not change): a 512-token snippet of a 20,000-character document encodes
        ~2,000 characters, not the document."""
        ids: list[int] = []
        for piece in encode_segments(text, 4 * (n + 1)):
            ids += piece
            if len(ids) > n:
                break
        return ids[: n + 1]


@dataclass(frozen=True)
class HFTokenizer:
    """A Hugging Face tokenizer by name or folder, used as the official client uses its
    ``AutoTokenizer``: encoded without special tokens, decoded skipping them."""

    tokenizer: Any

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))


def snippet_tokenizer(name: str) -> SnippetTokenizer:
    """The tokenizer snippets are cut with: ``"cl100k"`` (ours), or a Hugging Face tokenizer
    (``"Qwen/Qwen3-0.6B"``, the official one, loaded with ``transformers``)."""
    if name == CL100K:
        return Cl100k()
    from transformers import AutoTokenizer

    return HFTokenizer(AutoTokenizer.from_pretrained(name))


def snippet(text: str, max_tokens: int | None, tokenizer: SnippetTokenizer | None) -> str:
    """``text`` cut to its first ``max_tokens`` tokens (whole when it has no more, or when
    ``max_tokens`` is unset or 0), the official snippet rule."""
    if not max_tokens or max_tokens <= 0 or tokenizer is None:
        return text
    prefix = getattr(tokenizer, "encode_prefix", None)  # only the start's tokens, where it can
    ids = prefix(text, max_tokens) if prefix is not None else tokenizer.encode(text)
    return tokenizer.decode(ids[:max_tokens]) if len(ids) > max_tokens else text


def search_output(
    candidates: Sequence[dict[str, Any]],
    *,
    snippet_max_tokens: int | None,
    tokenizer: SnippetTokenizer | None,
) -> str:
    """What ``search`` returns to the model: each candidate's docid, score (when it has one) and
    snippet, as JSON indented by 2."""
    results: list[dict[str, Any]] = []
    for cand in candidates:
        cut = snippet(cand["text"], snippet_max_tokens, tokenizer)
        entry: dict[str, Any] = {"docid": cand["docid"]}
        if cand.get("score") is not None:
            entry["score"] = cand["score"]
        entry["snippet"] = cut
        results.append(entry)
    return json.dumps(results, indent=2)


def document_output(docid: str, document: dict[str, Any] | None) -> str:
    """What ``get_document`` returns: the document as JSON indented by 2, or the official
    not-found error."""
    if document is None:
        return json.dumps({"error": f"Document with docid '{docid}' not found"})
    return json.dumps(document, indent=2)


def error_output(name: str, error: BaseException) -> str:
    """The official tool-error result: ``Error executing <name>: <error>``."""
    return f"Error executing {name}: {error}"


def _search_function(k: int) -> dict[str, Any]:
    return {
        "name": "search",
        "description": SEARCH_DESCRIPTION.format(k=k),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": QUERY_PARAMETER_DESCRIPTION}},
            "required": ["query"],
            "additionalProperties": False,
        },
        "strict": True,
    }


def _get_document_function() -> dict[str, Any]:
    return {
        "name": "get_document",
        "description": GET_DOCUMENT_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"docid": {"type": "string", "description": DOCID_PARAMETER_DESCRIPTION}},
            "required": ["docid"],
            "additionalProperties": False,
        },
        "strict": True,
    }


def responses_tool_definitions(k: int, include_get_document: bool) -> list[dict[str, Any]]:
    """The official tool definitions, in the Responses API shape the official client sends."""
    functions = [_search_function(k)] + ([_get_document_function()] if include_get_document else [])
    return [{"type": "function", **f} for f in functions]


def tool_definitions(k: int, include_get_document: bool) -> list[dict[str, Any]]:
    """The same tools in the Chat Completions shape we send (``bind_tools`` passes it through)."""
    functions = [_search_function(k)] + ([_get_document_function()] if include_get_document else [])
    return [{"type": "function", "function": f} for f in functions]


_TEXTS: weakref.WeakKeyDictionary[Corpus, dict[str, str]] = weakref.WeakKeyDictionary()


def texts_of(corpus: Corpus) -> dict[str, str]:
    """Document text by id, made once per corpus (a tool round then looks a document up in
    constant time, at 10M tokens too)."""
    texts = _TEXTS.get(corpus)
    if texts is None:
        texts = _TEXTS[corpus] = {d.doc_id: d.text for d in corpus.documents}
    return texts


class Searcher(Protocol):
    """The search backend of the tools (the official ``BaseSearcher``'s two methods)."""

    def search(self, query: str, k: int) -> list[dict[str, Any]]: ...

    def get_document(self, docid: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class SearchTools:
    """The two tools over one searcher, run as the official ``SearchToolHandler`` runs them.

    Attributes:
        searcher: The backend.
        k: Documents a search returns (official default 5).
        snippet_max_tokens: Snippet length in tokens (official default 512; 0 or ``None``: whole).
        tokenizer: The snippet tokenizer.
        include_get_document: Offer ``get_document`` (the official ``--get-document``).
    """

    searcher: Searcher
    k: int = 5
    snippet_max_tokens: int | None = 512
    tokenizer: SnippetTokenizer | None = None
    include_get_document: bool = True

    def definitions(self) -> list[dict[str, Any]]:
        """The schemas sent with every request (Chat Completions shape)."""
        return tool_definitions(self.k, self.include_get_document)

    def execute(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call; an unknown tool or a missing argument raises (see :meth:`run`)."""
        if name == "search":
            candidates = self.searcher.search(arguments["query"], self.k)
            return search_output(
                candidates, snippet_max_tokens=self.snippet_max_tokens, tokenizer=self.tokenizer
            )
        if name == "get_document" and self.include_get_document:
            docid = arguments["docid"]
            return document_output(docid, self.searcher.get_document(docid))
        raise ValueError(f"Unknown tool: {name}")

    def run(self, name: str, raw_arguments: str) -> tuple[str, bool]:
        """Run one call from its raw JSON arguments: ``(result, ok)``, a failure answered with the
        official error text."""
        try:
            return self.execute(name, json.loads(raw_arguments)), True
        except BudgetReached:  # a reranker's call refused by the budget stops the run
            raise
        except Exception as error:  # noqa: BLE001 - the official loop feeds every failure back
            return error_output(name, error), False


@dataclass(frozen=True)
class CorpusSearcher:
    """Our retrievers as the official searcher: documents, not chunks.

    ``search`` retrieves the index's best chunks (``top_k`` of them, reranked where the settings
    say) and keeps the first ``k`` distinct documents in rank order, each scored by its best chunk,
    its ``text`` the whole document's (the official index holds whole documents, and the snippet
    is cut from the document's start); ``get_document`` returns a document of the corpus by id.
    """

    index: Index
    corpus: Corpus
    service: RetrievalService
    texts: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "texts", texts_of(self.corpus))

    def hits(self, query: str) -> list[Hit]:
        """The chunk hits one search reads."""
        return self.service.retrieve(self.index, query)

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        """The ``k`` best documents for ``query``: ``{"docid", "score", "text"}``."""
        found: dict[str, dict[str, Any]] = {}
        for hit in self.hits(query):
            doc_id = hit.chunk.doc_id
            if doc_id not in found:
                found[doc_id] = {"docid": doc_id, "score": hit.score, "text": self.texts[doc_id]}
            if len(found) == k:
                break
        return list(found.values())

    def get_document(self, docid: str) -> dict[str, Any] | None:
        """``{"docid", "text"}`` of the corpus's document ``docid``, else ``None``."""
        text = self.texts.get(docid)
        return None if text is None else {"docid": docid, "text": text}
