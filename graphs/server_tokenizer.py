"""A chat server's own tokenizer, through its tokenize / detokenize routes.

Server tokenizers (vLLM ``/tokenize``, llama.cpp ``/tokenize``, llama-cpp-python
``/extras/tokenize``) take one string per request, so long text is cut into pieces at
word or sentence boundaries (where every BPE pre-tokenizer also cuts, so the pieces'
tokens concatenate to the whole text's tokens; checked once per server) and the pieces
are sent in parallel over one keep-alive connection pool. What a probe finds is remembered
across processes (:mod:`graphs.probe_memory`): a later process checks a remembered route with
one request, and does not probe a server remembered to have none.

Here, beside :mod:`graphs.llm`, because it talks to the chat model's server; the offline
tokenizers it wraps (:class:`~retrieval.tokenizers.Tokenizer`) live in ``retrieval``,
which never calls a chat model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from graphs.probe_memory import ProbeResult, forget, probe_key, recall, remember
from retrieval.tokenizers import SERVER_DIALECTS, Tokenizer, TokenizerError

#: A probe cut where :func:`split_pieces` cuts: its pieces' tokens must concatenate to the whole's.
_PROBE_PIECES = (
    "Tokenizers agree on words.",
    " 分词器在句子边界切分文本。",
    "Numbers 12345 and  two  spaces.\n\nNew",
    " paragraph 第二段。",
)
_PROBE_TEXT = "".join(_PROBE_PIECES)
#: Seconds a probe request waits when ``$LONGCTX_TIMEOUT`` is not set (a probe must not hold a run up).
PROBE_TIMEOUT = 10.0
#: Seconds a tokenize request of a chosen server tokenizer waits when ``$LONGCTX_TIMEOUT`` is not set.
TOKENIZE_TIMEOUT = 60.0


def request_timeout(default: float) -> float:
    """``$LONGCTX_TIMEOUT`` (seconds per request, as for chat calls) when set, else ``default``."""
    value = os.environ.get("LONGCTX_TIMEOUT")
    return float(value) if value else default


def request_retries() -> int:
    """``$LONGCTX_MAX_RETRIES`` (default 3): retries of a tokenize request that timed out, as for chat calls."""
    return int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))


def server_root(base_url: str) -> str:
    """The server root of an OpenAI-compatible base URL (``.../v1`` stripped): tokenize routes live there."""
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
        """Whether the server may answer otherwise soon (408, 429, 5xx): not proof it lacks the route."""
        return self.status in (408, 429) or self.status >= 500


@dataclass
class Dialect:
    """A server's tokenize and detokenize routes, the request bodies they take and the reply's text field."""

    tokenize_path: str
    detokenize_path: str
    tokenize_body: Callable[[str, str], dict[str, Any]]
    detokenize_body: Callable[[list[int], str], dict[str, Any]]
    text_field: str


#: The routes of each of :data:`~retrieval.tokenizers.SERVER_DIALECTS`, probed in that order.
DIALECTS: dict[str, Dialect] = {
    # llama_cpp/server/app.py: TokenizeInputRequest{model, input} -> {tokens}; DetokenizeInputRequest{model, tokens} -> {text}
    "llama-cpp-python": Dialect(
        "/extras/tokenize",
        "/extras/detokenize",
        lambda t, m: {"input": t, "model": m},
        lambda ids, m: {"tokens": ids, "model": m},
        "text",
    ),
    # vLLM: TokenizeCompletionRequest{model, prompt, add_special_tokens} -> {tokens, count}; DetokenizeRequest -> {prompt}
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
        dialect: One of :data:`SERVER_DIALECTS`.
        max_chars: Characters per request piece (None: whole text in one request).
        workers: Requests in flight at once.
        timeout: Seconds each request waits.
        retries: Retries of a request that timed out before its ``httpx.TimeoutException`` is raised.
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

        self._client = httpx.Client(
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

    def _encode_one(self, text: str) -> list[int]:
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
            return self._encode_one(pieces[0])
        out: list[int] = []
        for ids in self._pool.map(self._encode_one, pieces):
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
        for i, ids in zip(owners, self._pool.map(self._encode_one, pieces)):
            out[i].extend(ids)
        return out

    def decode(self, ids: list[int]) -> str:
        """Text of token ids (raises :class:`TokenizerError` where the server refuses, e.g. a cut UTF-8 character)."""
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


def probe_server(
    base_url: str,
    model: str,
    *,
    dialects: Sequence[str] = SERVER_DIALECTS,
    api_key: str | None = None,
    timeout: float | None = None,
    retries: int | None = None,
) -> ServerTokenizer | None:
    """The first dialect whose tokenize and detokenize routes answer on ``base_url``, else None.

    The probe also finds a BOS the server prepends (tokenizing ``""``) and checks that
    pieces cut by :func:`split_pieces` concatenate to the whole text's tokens; where they
    do not, the server gets the whole text in one request.

    Each request waits ``timeout`` seconds (default ``$LONGCTX_TIMEOUT``, else
    :data:`PROBE_TIMEOUT`) and a timed-out one is retried ``retries`` times (default
    ``$LONGCTX_MAX_RETRIES``); a server that still does not answer is hanging, so the other
    dialects are not tried: a probe of a hung server fails after about
    ``timeout * (retries + 1)`` seconds.

    Raises:
        httpx.ConnectError: The server does not answer at all (the caller decides).
        httpx.TimeoutException: The server accepts connections but does not answer in time.
    """
    return _probe(base_url, model, dialects, api_key, timeout, retries)[0]


def _probe(
    base_url: str,
    model: str,
    dialects: Sequence[str],
    api_key: str | None,
    timeout: float | None,
    retries: int | None,
) -> tuple[ServerTokenizer | None, bool]:
    """:func:`probe_server`'s tokenizer, and whether a ``None`` is definite (no dialect failed with a
    transient status, 408, 429 or 5xx, that a later probe might not get)."""
    import httpx

    timeout = request_timeout(PROBE_TIMEOUT) if timeout is None else timeout
    retries = request_retries() if retries is None else retries
    definite = True
    for name in dialects:
        tok = _connect(base_url, model, name, api_key, timeout, retries)
        try:
            tok.prefix = tok._encode_one("")
            ids = tok._encode_one(_PROBE_TEXT)
            if not ids or tok.decode(ids).strip() != _PROBE_TEXT.strip():
                raise TokenizerError("detokenize does not invert tokenize")
        except (TokenizerError, httpx.TransportError, ValueError) as exc:
            tok.close()
            if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
                raise
            definite = definite and not (isinstance(exc, RouteError) and exc.transient)
            continue
        tok.probe_ids = ids
        if sum((tok._encode_one(p) for p in _PROBE_PIECES), []) != ids:
            tok.max_chars = None
        tok.set_timing(request_timeout(max(timeout, TOKENIZE_TIMEOUT)), request_retries())
        return tok, True
    return None, definite


def _connect(
    base_url: str, model: str, dialect: str, api_key: str | None, timeout: float, retries: int
) -> ServerTokenizer:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return ServerTokenizer(
        root=server_root(base_url),
        model=model,
        dialect=dialect,
        timeout=timeout,
        retries=retries,
        headers=headers,
    )


def _recalled(
    found: ProbeResult, dialect: str, base_url: str, model: str, api_key: str | None
) -> ServerTokenizer | None:
    """The remembered route ``dialect`` of ``found`` when the server still answers it as it did (one
    request: the probe text's ids, prefix stripped, are the remembered ones), else ``None``."""
    import httpx

    tok = _connect(
        base_url, model, dialect, api_key, request_timeout(PROBE_TIMEOUT), request_retries()
    )
    tok.prefix, tok.probe_ids = list(found.prefix), list(found.probe_ids)
    try:
        same = tok._encode_one(_PROBE_TEXT) == tok.probe_ids
    except (TokenizerError, ValueError, httpx.TransportError) as exc:
        tok.close()
        if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
            raise  # the server is down: as a probe would, the caller decides
        return None
    if not same:
        tok.close()
        return None
    tok.max_chars = None if found.whole_text else tok.max_chars
    tok.set_timing(request_timeout(TOKENIZE_TIMEOUT), request_retries())
    return tok


def server_tokenizer(
    base_url: str,
    model: str,
    *,
    dialect: str | None = None,
    api_key: str | None = None,
    recall_absence: bool = True,
) -> Tokenizer | None:
    """A :class:`Tokenizer` on the server's tokenize endpoint, or None when it has none.

    The probe's answer is remembered (:mod:`graphs.probe_memory`): a remembered route is
    checked with one request, a remembered absence is taken as it is unless
    ``recall_absence`` is false (an explicit ``tokenizer="server"``: the server is probed).
    """
    if dialect is not None and dialect not in SERVER_DIALECTS:
        raise TokenizerError(
            f"Unknown server tokenizer dialect {dialect!r}; use one of {', '.join(SERVER_DIALECTS)}."
        )
    dialects = [dialect] if dialect else list(SERVER_DIALECTS)
    key = probe_key(server_root(base_url), model, dialects, api_key)
    remembered = recall(key)
    found = None
    if remembered is not None and remembered.dialect is None and recall_absence:
        return None
    if remembered is not None and remembered.dialect is not None:
        known = remembered.dialect in dialects  # else written by a version with other dialects
        found = (
            _recalled(remembered, remembered.dialect, base_url, model, api_key) if known else None
        )
        if found is None:
            forget(key)  # the server changed: probed again below
    if found is None:
        found, definite = _probe(base_url, model, dialects, api_key, None, None)
        if found is not None or definite:
            remember(key, _result(found))
    if found is None:
        return None
    note = f"{found.dialect} tokenize endpoint" + (
        "" if found.max_chars else " (whole text per request: pieces did not concatenate exactly)"
    )
    return Tokenizer(
        id=f"server:{found.dialect}:{model} @ {server_root(base_url)}",
        encode_fn=found.encode,
        decode_fn=found.decode,
        encode_batch_fn=found.encode_batch,
        note=note,
    )


def _result(found: ServerTokenizer | None) -> ProbeResult:
    """What a probe found, to remember."""
    if found is None:
        return ProbeResult(dialect=None, probed_at=time.time())
    return ProbeResult(dialect=found.dialect, prefix=list(found.prefix), probe_ids=list(found.probe_ids), whole_text=found.max_chars is None,
                       probed_at=time.time())  # fmt: skip
