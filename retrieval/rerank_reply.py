"""What a rerank server's reply must hold before its ranking chooses an answer's context.

A reply is untrusted input: a body that is not a JSON object, a non-standard number
(``NaN``, ``Infinity``), nesting deep enough to exhaust the parser, an index that is not an
integer naming a document sent, the same document ranked twice, or fewer results than asked
(``min(top_n, documents)``) is a :class:`MalformedReply`. The server reranker retries it like a
5xx and then fails the call with :class:`~retrieval.rerank.RerankError` naming the server, so
an answer is never made from a silently shrunken context (one chunk, or none, of the ``top_k``
asked). More results than asked are fine: the best ``top_n`` are kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class MalformedReply(ValueError):
    """A rerank reply that cannot be used as it is (the message says why, in one line)."""


def _refuse_constant(name: str) -> Any:
    raise MalformedReply(f"the reply holds {name}, which is not JSON")


def strict_json(content: bytes) -> Any:
    """``content`` parsed as standard JSON: ``NaN`` and ``Infinity`` refused, as is nesting that
    exhausts the parser (a ``RecursionError`` otherwise) and bytes that are not UTF-8 JSON."""
    try:
        return json.loads(content, parse_constant=_refuse_constant)
    except RecursionError:
        raise MalformedReply("the reply is nested too deeply to parse") from None
    except MalformedReply:
        raise
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise MalformedReply(f"the reply is not JSON ({exc})") from None


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, for a message: ``a list``, ``a string``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else type(value).__name__


def reply_scores(results: Any, n_documents: int, top_n: int) -> dict[int, float]:
    """``{document index: score}`` of a reply's ``results`` list, each ``{"index",
    "relevance_score"}`` (or ``"score"``).

    Raises:
        MalformedReply: ``results`` is not a list; an item is not an object; an index is not an
            integer (``1.5``, ``"1"``, ``true``) or names no document sent; a document is ranked
            twice; a score is not a number; fewer distinct documents than
            ``min(top_n, n_documents)`` are ranked (``results: []`` among them).
    """
    if not isinstance(results, list):
        raise MalformedReply(f"no 'results' list (it is {json_kind(results)})")
    scores: dict[int, float] = {}
    for item in results:
        if not isinstance(item, Mapping):
            raise MalformedReply(f"a result is {json_kind(item)}, not an object")
        index = item.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise MalformedReply(f"a result's index {str(index)[:40]!r} is not an integer")
        if not 0 <= index < n_documents:
            raise MalformedReply(f"result index {index} outside the {n_documents} documents sent")
        if index in scores:
            raise MalformedReply(f"document {index} is ranked twice")
        score = item["relevance_score"] if "relevance_score" in item else item.get("score")
        if (
            not isinstance(score, (int, float))
            or isinstance(score, bool)
            or abs(score) > 1e300  # an integer past a float's range
        ):
            raise MalformedReply(f"document {index}'s score {str(score)[:40]!r} is not a number")
        scores[index] = float(score)
    asked = max(min(top_n, n_documents), 0)
    if len(scores) < asked:
        raise MalformedReply(
            f"{len(scores)} of the {asked} documents asked are ranked (top_n {top_n} of "
            f"{n_documents} sent): the context would shrink"
        )
    return scores


__all__ = ["MalformedReply", "json_kind", "reply_scores", "strict_json"]
