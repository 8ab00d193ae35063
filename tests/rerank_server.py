"""A recording rerank server on loopback speaking the common rerank API (vLLM, llama.cpp, Jina,
Cohere style).

``POST /v1/rerank`` and ``/rerank`` take ``{"model", "query", "documents", "top_n"}`` and answer
``{"results": [{"index", "relevance_score"}], "usage": {"total_tokens"}}``, scores from
:func:`word_overlap`. Every request body is recorded (``requests``). ``fail`` requests answer
``fail_status`` first (``fail=-1``: all of them); ``hang`` makes every request wait until the
server closes (a client's timeout); ``raw`` answers every request 200 with those bytes as they
are (a malformed reply: a list, ``NaN``, duplicate indexes...).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_server import LoopbackServer


def words(text: str) -> set[str]:
    """Lowercase word set of ``text``."""
    return set(re.findall(r"\w+", text.lower()))


def word_overlap(query: str, document: str) -> float:
    """The server's relevance: query words found in the document, per document word (ties
    are possible)."""
    doc = words(document)
    return len(words(query) & doc) / max(len(doc), 1)


def token_count(query: str, document: str) -> int:
    """The tokens the server reports for one pair: words of both."""
    return len(query.split()) + len(document.split())


class RerankServer(LoopbackServer):
    """Serve on ``127.0.0.1`` in a background thread; use as a context manager."""

    def __init__(
        self, *, fail: int = 0, fail_status: int = 503, hang: bool = False, raw: bytes | None = None
    ):
        self.raw = raw
        self.fail = fail
        self.fail_status = fail_status
        self.hang = hang
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._closing = threading.Event()
        self._lock = threading.Lock()
        super().__init__()

    def __exit__(self, *exc: Any) -> None:
        self._closing.set()  # a hanging request returns, so shutdown does not wait for it
        super().__exit__(*exc)

    def _reply(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
            failing = self.fail != 0
            if self.fail > 0:
                self.fail -= 1
        if self.hang:
            self._closing.wait()
        if failing:
            return self.fail_status, {"error": {"message": "reranker overloaded"}}
        docs, query = request["documents"], request["query"]
        scored = sorted(
            ((i, word_overlap(query, d)) for i, d in enumerate(docs)), key=lambda p: (-p[1], p[0])
        )
        top_n = request.get("top_n") or len(docs)
        results = [{"index": i, "relevance_score": s} for i, s in scored[:top_n]]
        return 200, {
            "model": request.get("model"),
            "results": results,
            "usage": {"total_tokens": sum(token_count(query, d) for d in docs)},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                outer.paths.append(self.path)
                body = json.loads(
                    self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}"
                )
                status, reply = (
                    outer._reply(body)
                    if self.path in ("/v1/rerank", "/rerank")
                    else (404, {"error": "no route"})
                )
                data = json.dumps(reply).encode() if outer.raw is None else outer.raw
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timed out)
                    pass

        return Handler
