"""A chat server's tokenize / detokenize routes as a client: the dialects, and long text cut into
pieces.

Server tokenizers (vLLM ``/tokenize``, llama.cpp ``/tokenize``, llama-cpp-python
``/extras/tokenize``) take one string per request, so long text is cut into pieces at
word or sentence boundaries (where every BPE pre-tokenizer also cuts, so the pieces'
tokens concatenate to the whole text's tokens; :mod:`longctx.graphs.tokenizers.server_tokenizer`
checks that once per server) and the pieces are sent in parallel over one keep-alive connection
pool.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from longctx.retrieval.deadlines import deadline_client
from longctx.retrieval.tokenizers import TokenizerError

#: Seconds a tokenize request of a chosen server tokenizer waits when ``$LONGCTX_TIMEOUT`` is not
#: set.
TOKENIZE_TIMEOUT = 60.0


def server_root(base_url: str) -> str:
    """The server root of an OpenAI-compatible base URL (``.../v1`` stripped): tokenize routes live
    there."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def split_pieces(text: str, max_chars: int) -> list[str]:
    """``text`` cut into pieces of at most about ``max_chars`` characters, at token-safe boundaries.

    A piece ends before a single space between two words (the space starts the next
    piece, as BPE pre-tokenizers attach it to the following word) or after sentence
    punctuation followed by a letter; text with neither within a window is cut hard.
    """
    if len(text) <= max_chars:
        return [text] if text else []
    pieces, start, n = [], 0, len(text)
    while n - start > max_chars:
        end = start + max_chars
        cut = _safe_cut(text, start + max_chars // 2, end)
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


_SENTENCE_END = set("。！？；，、.!?;:")


def _safe_cut(text: str, lo: int, hi: int) -> int:
    for i in range(hi, lo, -1):
        prev, cur, nxt = text[i - 1], text[i], text[i + 1] if i + 1 < len(text) else " "
        if cur == " " and not prev.isspace() and not nxt.isspace():
            return i
        if prev in _SENTENCE_END and cur.isalpha():
            return i
    return hi


class RouteError(TokenizerError):
    """A tokenize or detokenize route answered with an HTTP error ``status``."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether the server may answer otherwise soon (408, 429, 5xx): not proof it lacks the
        route."""
        return self.status in (408, 429) or self.status >= 500


@dataclass
class Dialect:
    """A server's tokenize and detokenize routes, the request bodies they take and the reply's text
    field."""

    tokenize_path: str
    detokenize_path: str
    tokenize_body: Callable[[str, str], dict[str, Any]]
    detokenize_body: Callable[[list[int], str], dict[str, Any]]
    text_field: str


#: The routes of each of :data:`~retrieval.tokenizers.SERVER_DIALECTS`, probed in that order.
DIALECTS: dict[str, Dialect] = {
    # llama_cpp/server/app.py: TokenizeInputRequest{model, input} -> {tokens};
    # DetokenizeInputRequest{model, tokens} -> {text}
    "llama-cpp-python": Dialect(
        "/extras/tokenize",
        "/extras/detokenize",
        lambda t, m: {"input": t, "model": m},
        lambda ids, m: {"tokens": ids, "model": m},
        "text",
    ),
    # vLLM: TokenizeCompletionRequest{model, prompt, add_special_tokens} -> {tokens, count};
    # DetokenizeRequest -> {prompt}
    "vllm": Dialect(
        "/tokenize",
        "/detokenize",
        lambda t, m: {"model": m, "prompt": t, "add_special_tokens": False},
        lambda ids, m: {"model": m, "tokens": ids},
        "prompt",
    ),
    # llama.cpp server: {content, add_special} -> {tokens}; {tokens} -> {content}
    "llama.cpp": Dialect(
        "/tokenize",
        "/detokenize",
        lambda t, m: {"content": t, "add_special": False},
        lambda ids, m: {"tokens": ids},
        "content",
    ),
}


@dataclass
class ServerTokenizer:
    """A server's tokenize / detokenize routes, with long text sent as parallel pieces.

    Attributes:
        root: Server root (no ``/v1``).
        model: Model name sent with each request (the served alias).
        dialect: One of :data:`~retrieval.tokenizers.SERVER_DIALECTS`.
        max_chars: Characters per request piece (None: whole text in one request).
        workers: Requests in flight at once.
        timeout: Seconds each request may take in all (a deadline:
            :mod:`longctx.retrieval.deadlines`).
        retries: Retries of a request that timed out before its ``httpx.TimeoutException`` is
            raised.
        headers: Sent with every request (the API key).
        prefix: Ids the server prepends to every request (a BOS), stripped from its replies.
        probe_ids: The probe text's ids, as the probe found them.
    """

    root: str
    model: str
    dialect: str
    max_chars: int | None = 16_000
    workers: int = 8
    timeout: float = TOKENIZE_TIMEOUT
    retries: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    prefix: list[int] = field(default_factory=list)
    probe_ids: list[int] = field(default_factory=list)
    _client: Any = None

    def __post_init__(self) -> None:
        import httpx  # the openai client's transport; imported only for server tokenizers

        self._client = deadline_client(  # each request's timeout a deadline, not a wait per read
            httpx,
            timeout=self.timeout,
            headers=self.headers,
            limits=httpx.Limits(
                max_connections=self.workers, max_keepalive_connections=self.workers
            ),
        )
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tokenize")

    def set_timing(self, timeout: float, retries: int) -> None:
        """Wait ``timeout`` seconds per request, retrying a timed-out one ``retries`` times."""
        import httpx

        self.timeout, self.retries = timeout, retries
        self._client.timeout = httpx.Timeout(timeout)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        attempt = 0
        while True:
            try:
                resp = self._client.post(self.root + path, json=body)
                break
            except httpx.TimeoutException:
                if attempt >= self.retries:
                    raise
                attempt += 1
        if resp.status_code != 200:
            raise RouteError(
                f"{self.root}{path} answered HTTP {resp.status_code}: {resp.text[:200]}",
                status=resp.status_code,
            )
        data = resp.json()
        if not isinstance(data, dict):
            raise TokenizerError(f"{self.root}{path} answered {str(data)[:200]}")
        return data

    def encode_piece(self, text: str) -> list[int]:
        """Token ids of one request's text (a BOS the server prepends stripped)."""
        d = DIALECTS[self.dialect]
        ids = self._post(d.tokenize_path, d.tokenize_body(text, self.model)).get("tokens")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise TokenizerError(f"{self.root}{d.tokenize_path} answered no token list")
        if self.prefix and ids[: len(self.prefix)] == self.prefix:
            ids = ids[len(self.prefix) :]  # a BOS the server adds to every request
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (pieces in parallel, concatenated)."""
        if not text:
            return []
        pieces = split_pieces(text, self.max_chars) if self.max_chars else [text]
        if len(pieces) == 1:
            return self.encode_piece(pieces[0])
        out: list[int] = []
        for ids in self._pool.map(self.encode_piece, pieces):
            out.extend(ids)
        return out

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids of many texts, their pieces all in flight together."""
        pieces, owners = [], []
        for i, t in enumerate(texts):
            for p in split_pieces(t, self.max_chars) if self.max_chars else ([t] if t else []):
                pieces.append(p)
                owners.append(i)
        out: list[list[int]] = [[] for _ in texts]
        for i, ids in zip(owners, self._pool.map(self.encode_piece, pieces)):
            out[i].extend(ids)
        return out

    def decode(self, ids: list[int]) -> str:
        """Text of token ids (raises :class:`TokenizerError` where the server refuses, e.g. a cut
        UTF-8 character)."""
        if not ids:
            return ""
        d = DIALECTS[self.dialect]
        text = self._post(d.detokenize_path, d.detokenize_body(list(ids), self.model)).get(
            d.text_field
        )
        if not isinstance(text, str):
            raise TokenizerError(f"{self.root}{d.detokenize_path} answered no text")
        return text

    def close(self) -> None:
        """Close the connection pool."""
        self._pool.shutdown(wait=False)
        self._client.close()
