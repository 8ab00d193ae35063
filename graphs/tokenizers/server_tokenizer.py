"""A chat server's own tokenizer, through its tokenize / detokenize routes: which routes it has,
probed.

The probe tries each dialect's routes (:mod:`longctx.graphs.tokenizers.tokenize_routes`, the client
that sends long text as parallel pieces) and checks once per server that pieces cut at word or
sentence boundaries concatenate to the whole text's tokens. What a probe finds is remembered across
processes (:mod:`longctx.graphs.tokenizers.probe_memory`): a later process checks a remembered route
with one request, and does not probe a server remembered to have none.

Here, beside :mod:`longctx.graphs.calls.llm`, because it talks to the chat model's server; the
offline tokenizers it wraps (:class:`~retrieval.tokenizers.Tokenizer`) live in ``retrieval``,
which never calls a chat model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from longctx.graphs.tokenizers.probe_memory import ProbeResult, forget, probe_key, recall, remember
from longctx.graphs.tokenizers.tokenize_routes import (
    TOKENIZE_TIMEOUT,
    RouteError,
    ServerTokenizer,
    server_root,
)
from longctx.retrieval.tokenizers import SERVER_DIALECTS, Tokenizer, TokenizerError

#: A probe cut where :func:`~graphs.tokenizers.tokenize_routes.split_pieces` cuts: its pieces'
#: tokens must concatenate to the whole's.
_PROBE_PIECES = (
    "Tokenizers agree on words.",
    " 分词器在句子边界切分文本。",
    "Numbers 12345 and  two  spaces.\n\nNew",
    " paragraph 第二段。",
)
_PROBE_TEXT = "".join(_PROBE_PIECES)
#: Seconds a probe request waits when ``$LONGCTX_TIMEOUT`` is not set (a probe must not hold a run
#: up).
PROBE_TIMEOUT = 10.0


def request_timeout(default: float) -> float:
    """``$LONGCTX_TIMEOUT`` (seconds per request, as for chat calls) when set, else ``default``."""
    value = os.environ.get("LONGCTX_TIMEOUT")
    return float(value) if value else default


def request_retries() -> int:
    """``$LONGCTX_MAX_RETRIES`` (default 3): retries of a tokenize request that timed out, as for
    chat calls."""
    return int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))


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
    pieces cut by :func:`~graphs.tokenizers.tokenize_routes.split_pieces` concatenate to the whole
    text's tokens; where they do not, the server gets the whole text in one request.

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
    """:func:`probe_server`'s tokenizer, and whether a ``None`` is definite (no dialect failed with
    a transient status, 408, 429 or 5xx, that a later probe might not get)."""
    import httpx

    timeout = request_timeout(PROBE_TIMEOUT) if timeout is None else timeout
    retries = request_retries() if retries is None else retries
    definite = True
    for name in dialects:
        tok = _connect(base_url, model, name, api_key, timeout, retries)
        try:
            tok.prefix = tok.encode_piece("")
            ids = tok.encode_piece(_PROBE_TEXT)
            if not ids or tok.decode(ids).strip() != _PROBE_TEXT.strip():
                raise TokenizerError("detokenize does not invert tokenize")
        except (TokenizerError, httpx.TransportError, ValueError) as exc:
            tok.close()
            if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
                raise
            definite = definite and not (isinstance(exc, RouteError) and exc.transient)
            continue
        tok.probe_ids = ids
        if sum((tok.encode_piece(p) for p in _PROBE_PIECES), []) != ids:
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
        same = tok.encode_piece(_PROBE_TEXT) == tok.probe_ids
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

    The probe's answer is remembered (:mod:`longctx.graphs.tokenizers.probe_memory`): a remembered
    route is checked with one request, a remembered absence is taken as it is unless
    ``recall_absence`` is false (an explicit ``tokenizer="server"``: the server is probed).
    """
    if dialect is not None and dialect not in SERVER_DIALECTS:
        raise TokenizerError(
            f"Unknown server tokenizer dialect {dialect!r}; use one of "
            f"{', '.join(SERVER_DIALECTS)}."
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
    return ProbeResult(
        dialect=found.dialect,
        prefix=list(found.prefix),
        probe_ids=list(found.probe_ids),
        whole_text=found.max_chars is None,
        probed_at=time.time(),
    )
