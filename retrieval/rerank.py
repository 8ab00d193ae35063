"""Reranking: a second stage that rescores a retriever's candidates against the query.

Two kinds, both registered in :data:`RERANKERS`:

* ``cross-encoder``: a sentence-transformers ``CrossEncoder`` from a local path (bge-reranker,
  ms-marco-MiniLM, ...), run in this process; loaded once per process and options.
* ``server``: any server speaking the common rerank API, ``POST {base_url}/rerank`` with
  ``{"model", "query", "documents", "top_n"}`` answering ``{"results": [{"index",
  "relevance_score"}], "usage": {"total_tokens"}}``: vLLM (``/v1/rerank``), llama.cpp's
  ``llama-server --reranking``, Jina's and Cohere's APIs. Timeouts and retries are those of
  chat calls (``$LONGCTX_TIMEOUT``, 600 s; ``$LONGCTX_MAX_RETRIES``, 3; the openai SDK's
  backoff, 0.5 s doubling to 8 s); a request still failing then raises :class:`RerankError`
  naming the server, the status and the retries made.

Every call reports what it cost in a :class:`RerankResult` (calls, failed calls, tokens the
server reported or the cross-encoder's tokenizer counted), for the answer's ``Usage``.
"""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from longctx.retrieval.base import Hit
from longctx.retrieval.contract.errors import ModelError
from longctx.retrieval.contract.registry import Registry
from longctx.retrieval.deadlines import deadline_client
from longctx.retrieval.extras import require
from longctx.retrieval.reported_usage import checked_rerank_tokens
from longctx.retrieval.rerank_reply import MalformedReply, json_kind, reply_scores, strict_json

#: HTTP statuses retried, as the openai SDK retries a chat call's (besides
#: timeouts and connection errors).
RETRIED_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))


class RerankError(ModelError):
    """A rerank request that failed for good (after its retries), naming the server and
    what it said.

    Attributes:
        url: The endpoint called.
        status: The last HTTP status, None for a timeout or connection failure.
        retries: Retries made after the first attempt.
    """

    def __init__(self, message: str, *, url: str, status: int | None, retries: int):
        super().__init__(message)
        self.url = url
        self.status = status
        self.retries = retries


@dataclass(frozen=True)
class RerankResult:
    """One rerank call's outcome: document indexes by relevance, and what it cost.

    Attributes:
        ranking: ``(index into the documents, relevance score)``, best first, ``top_n`` of them.
        calls: Requests (or local batches of one call) that returned: 1.
        failed_calls: Attempts that failed before the one that returned (retried).
        tokens: Tokens the server reported (``usage.total_tokens``), or the cross-encoder's
            tokenizer counted over the query-document pairs; 0 when neither is known.
    """

    ranking: list[tuple[int, float]]
    calls: int = 1
    failed_calls: int = 0
    tokens: int = 0


class Reranker(Protocol):
    """Scores documents against a query; the best ``top_n`` come back, best first."""

    name: str

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> RerankResult:
        """The ``top_n`` most relevant ``documents`` for ``query`` (their indexes and scores)."""
        ...


def order_by_score(scores: Mapping[int, float], top_n: int) -> list[tuple[int, float]]:
    """``(index, score)`` pairs of ``scores`` by score, best first (ties by lower index), ``top_n``
    of them; a NaN score (a cross-encoder's overflow) ranks last, never above a finite one."""
    pairs = ((i, float(s)) for i, s in scores.items())
    return sorted(pairs, key=lambda pair: (math.isnan(pair[1]), -pair[1], pair[0]))[: max(top_n, 0)]


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` (any local checkpoint), scoring
    ``(query, document)`` pairs.

    Args:
        model: Path (or hub id, when online) of the cross-encoder checkpoint.
        batch_size: Pairs per forward pass.
        max_length: Pair length cut (default: the model's own).
        device: ``cpu``, ``cuda``...; default sentence-transformers' choice.
    """

    name = "cross-encoder"

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str | None = None,
    ):
        if not model:
            raise ValueError("the cross-encoder reranker needs rerank_options={'model': PATH}")
        self.model_id = str(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                require(
                    "sentence_transformers", extra="dense", feature="the cross-encoder reranker"
                )
                from sentence_transformers import (
                    CrossEncoder,
                )  # torch: only for users of a local reranker

                self._model = CrossEncoder(
                    self.model_id, max_length=self.max_length, device=self.device
                )
            return self._model

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> RerankResult:
        """Score every ``(query, document)`` pair in one call; the ``top_n`` best."""
        if not documents:
            return RerankResult([])
        model = self._load()
        pairs = [(query, d) for d in documents]
        scores = model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        limit = (
            model.max_seq_length if hasattr(type(model), "max_seq_length") else model.max_length
        )  # renamed in sentence-transformers 5
        encoded = model.tokenizer(
            [q for q, _ in pairs], [d for _, d in pairs], truncation=True, max_length=limit
        )
        tokens = sum(len(ids) for ids in encoded["input_ids"])
        return RerankResult(order_by_score(dict(enumerate(scores)), top_n), tokens=tokens)


def retry_delay(retry: int, base: float) -> float:
    """Seconds before retry ``retry`` (1-based): ``base`` doubling to 16 times it, jittered (the
    openai SDK's schedule at 0.5 s)."""
    return min(base * 2.0 ** (retry - 1), base * 16) * (1 - 0.25 * random.random())


class ServerReranker:
    """A server speaking the common rerank API (vLLM, llama.cpp, Jina, Cohere style).

    Args:
        base_url: The API root, as an OpenAI ``base_url`` (``http://host:8000/v1``); the request
            goes to ``{base_url}/{route}``.
        model: The reranker model name the server expects.
        api_key: Sent as a bearer token; default ``$LONGCTX_RERANK_API_KEY`` (none if unset).
        route: ``rerank`` (vLLM's ``/v1/rerank``, llama.cpp's, Jina's, Cohere's ``/v1/rerank``).
        timeout: Seconds a request attempt may take in all (a deadline, not a wait per read:
            :mod:`longctx.retrieval.deadlines`); default ``$LONGCTX_TIMEOUT`` or 600, as chat calls.
        max_retries: Retries of a timeout, connection failure, 408/409/429/5xx or malformed
            reply; default ``$LONGCTX_MAX_RETRIES`` or 3, as chat calls.
        backoff: Seconds before the first retry, doubling (the openai SDK's 0.5).
    """

    name = "server"

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key: str | None = None,
        route: str = "rerank",
        timeout: float | None = None,
        max_retries: int | None = None,
        backoff: float = 0.5,
    ):
        if not base_url:
            raise ValueError(
                "the server reranker needs rerank_options={'base_url': 'http://HOST:PORT/v1', "
                "'model': NAME}"
            )
        self.url = f"{base_url.rstrip('/')}/{route.strip('/')}"
        self.model_id = model
        self.api_key = api_key if api_key is not None else os.environ.get("LONGCTX_RERANK_API_KEY")
        self.timeout = (
            float(os.environ.get("LONGCTX_TIMEOUT", "600")) if timeout is None else float(timeout)
        )
        self.max_retries = (
            int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))
            if max_retries is None
            else int(max_retries)
        )
        self.backoff = backoff
        self._client: Any = None
        self._lock = threading.Lock()

    def _http(self) -> Any:
        with self._lock:  # one client (its connection pool) for every thread of the run
            if self._client is None:
                import httpx  # the openai SDK's HTTP client, a dependency already

                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                self._client = deadline_client(httpx, timeout=self.timeout, headers=headers)
            return self._client

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> RerankResult:
        """One request (retried as a chat call is); raises :class:`RerankError` when it
        fails for good."""
        if not documents:
            return RerankResult([])
        body = {
            "model": self.model_id,
            "query": query,
            "documents": list(documents),
            "top_n": top_n,
            "return_documents": False,
        }
        failed = 0
        while True:
            outcome = self._attempt(body)
            if isinstance(outcome, RerankResult):
                return replace(outcome, failed_calls=failed)
            status, error = outcome
            failed += 1
            if status is not None and status != 200 and status not in RETRIED_STATUSES:
                message = (
                    f"The rerank server at {self.url} rejected the request (HTTP {status}): {error}"
                )
                raise RerankError(message, url=self.url, status=status, retries=failed - 1)
            if failed > self.max_retries:
                what, check = (
                    ("no answer", "that it is running")
                    if status is None
                    else (f"HTTP {status}", "that it speaks the rerank API")
                )
                message = (
                    f"The rerank server at {self.url} failed after {self.max_retries} retries "
                    f"({what}: {error}). Check {check}."
                )
                raise RerankError(message, url=self.url, status=status, retries=self.max_retries)
            time.sleep(retry_delay(failed, self.backoff))

    def _attempt(self, body: dict[str, Any]) -> RerankResult | tuple[int | None, str]:
        """One request: its result, or ``(HTTP status or None, why)`` when it gave none (a
        malformed reply keeps its status, 200, and is retried like a 5xx)."""
        import httpx

        try:
            response = self._http().post(self.url, json=body)
        except httpx.HTTPError as exc:  # timeouts and connection failures
            return None, f"{type(exc).__name__}: {exc}"
        if response.status_code != 200:
            return response.status_code, response.text[:500]
        try:
            return parse_reply(
                strict_json(response.content), len(body["documents"]), body["top_n"], self.url
            )
        except (ValueError, TypeError, OverflowError) as exc:  # MalformedReply, a usage field
            return 200, f"malformed reply: {exc}"


def parse_reply(reply: Any, n_documents: int, top_n: int, server: str = "?") -> RerankResult:
    """A rerank API reply as a :class:`RerankResult` (``results`` or ``data``;
    ``usage.total_tokens`` or ``prompt_tokens``, checked by
    :func:`~retrieval.reported_usage.checked_rerank_tokens`, a warning naming ``server`` where
    unusable; Cohere's ``meta.billed_units`` counts search units, not tokens: 0).

    Raises:
        MalformedReply: Anything but an object whose results rank distinct documents sent, at
            least as many as were asked (:func:`~retrieval.rerank_reply.reply_scores`).
    """
    if not isinstance(reply, Mapping):
        raise MalformedReply(f"the reply is {json_kind(reply)}, not an object")
    scores = reply_scores(reply.get("results", reply.get("data")), n_documents, top_n)
    tokens = checked_rerank_tokens(reply.get("usage"), f"the rerank server at {server}")
    return RerankResult(order_by_score(scores, top_n), tokens=tokens)


#: name -> reranker factory taking its options; third parties add to ``longctx.rerankers``.
RERANKERS: Registry[Callable[..., Reranker]] = Registry("reranker", group="longctx.rerankers")
RERANKERS.register("cross-encoder", CrossEncoderReranker)
RERANKERS.register("server", ServerReranker)

_LOADED: dict[str, Reranker] = {}
_LOADED_LOCK = threading.Lock()


def get_reranker(name: str, options: Mapping[str, Any] | None = None) -> Reranker:
    """The reranker ``name`` with ``options``, made once per process (a cross-encoder loads its
    weights once)."""
    key = json.dumps([name, dict(options or {})], sort_keys=True, default=str)
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = RERANKERS.get(name)(**dict(options or {}))
        return _LOADED[key]


def rerank_hits(
    hits: Sequence[Hit], query: str, reranker: Reranker, top_n: int, *, stage: str
) -> tuple[list[Hit], RerankResult]:
    """``hits`` reranked: the ``top_n`` best by ``reranker``, their rank and score the reranker's.

    Each hit keeps what the first stage said of it in ``components``: its components (hybrid's
    ``bm25`` and ``dense``), plus ``stage`` (the first stage's own rank and score), plus ``rerank``.
    """
    result = reranker.rerank(query, [h.chunk.text for h in hits], top_n)
    out = []
    for rank, (i, score) in enumerate(result.ranking):
        hit = hits[i]
        components = {
            **(hit.components or {}),
            stage: {"rank": hit.rank, "score": hit.score},
            "rerank": {"rank": rank, "score": score},
        }
        out.append(Hit(hit.chunk, score, rank, components))
    return out, result
