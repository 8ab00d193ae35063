"""Chat-model errors: what a failed provider call becomes (:class:`ChatModelError`, naming the
server, the HTTP status and the retries made) and which failures are retried.

The openai SDK retries transient errors (connection, 408/409/429/5xx) with exponential
backoff; malformed replies (a body that is not JSON, an empty ``choices`` list) are retried
the same way by :mod:`longctx.agents.openai_chat`, up to ``$LONGCTX_MAX_RETRIES`` times. Its own
module, below both the factory (:mod:`longctx.agents.chat_models`) and the OpenAI client, so neither
imports the other.
"""

from __future__ import annotations

import json
import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.lean_transport import should_retry
from longctx.retrieval.contract.errors import ModelError
from longctx.retrieval.redaction import redact

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


class ChatModelError(ModelError):
    """A chat model cannot be built (bad spec, missing key or file) or its server does not answer.

    For a server failure: ``url`` (the server), ``status`` (the last HTTP status, ``None``
    if no response came) and ``retries`` (retries made before giving up), when known. The
    message and URL are redacted (:func:`longctx.retrieval.redaction.redact`): a provider's error
    body may echo the request's credentials.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int | None = None,
        retries: int | None = None,
    ):
        super().__init__(redact(message))
        self.url = redact(url)
        self.status = status
        self.retries = retries


class MalformedResponseError(ValueError):
    """A 200 reply that is not a usable chat completion (not JSON, no ``choices``); retried."""

    status = 200


#: What LangChain raises when a streamed call yields no chunk: a server that answered without
#: streaming.
NO_STREAM = "No generations found in stream"

#: HTTP statuses the openai SDK retries (besides connection errors and timeouts).
_RETRIED_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def max_retries_setting() -> int:
    """``$LONGCTX_MAX_RETRIES`` (default 3): retries of a failed or malformed chat request."""
    return int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))


def is_malformed(exc: BaseException) -> bool:
    """Whether ``exc`` is a malformed 200 reply (not JSON, no ``choices``, not a chat completion):
    retried like a 5xx."""
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a hard dependency
        return isinstance(exc, (MalformedResponseError, json.JSONDecodeError))
    return isinstance(
        exc, (MalformedResponseError, json.JSONDecodeError, openai.APIResponseValidationError)
    )


def _was_retried(exc: Any) -> bool:
    """Whether the SDK retried a failed status: its rule read from the response (``x-should-retry``,
    a ``retry-after`` beyond 120 s), or the status alone when the response is not at hand."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return exc.status_code in _RETRIED_STATUSES
    return should_retry(exc.status_code, headers)


def as_chat_model_error(
    exc: BaseException, llm: Any, *, retries: int | None = None
) -> BaseException:
    """A provider failure as a :class:`ChatModelError` naming the server, HTTP status and retries.

    Connection failures and timeouts, authentication errors, HTTP error statuses, malformed
    replies and a streamed call that got no stream (a server that does not stream) are mapped;
    anything else (a bug, a bad argument) is returned unchanged. ``retries`` defaults to what the
    client did: the count a run's lean transport noted on the error, else the model's
    ``max_retries`` for statuses the SDK retries, none for others (the SDK's errors do not say how
    many it made).
    """
    if isinstance(exc, ChatModelError):
        return exc
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a hard dependency
        return exc
    url = server_url(llm) or "the configured server"
    if retries is None:
        # known when a run's lean transport made the call
        retries = getattr(exc, "retries_made", None)
    configured = getattr(llm, "max_retries", None)
    configured = max_retries_setting() if configured is None else int(configured)
    if isinstance(exc, openai.AuthenticationError):
        return ChatModelError(
            f"The chat model server at {url} rejected the API key (HTTP {exc.status_code}; check "
            "OPENAI_API_KEY).",
            url=url,
            status=exc.status_code,
            retries=0,
        )
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        n = configured if retries is None else retries
        return ChatModelError(
            f"The chat model server at {url} did not answer after {n} retries "
            f"({type(exc).__name__}: {exc}). Check that it is running and that OPENAI_BASE_URL "
            "points to it.",
            url=url,
            status=None,
            retries=n,
        )
    if isinstance(exc, openai.APIStatusError):
        n = retries if retries is not None else (configured if _was_retried(exc) else 0)
        return ChatModelError(
            f"The chat model server at {url} failed with HTTP {exc.status_code} after {n} "
            f"retries: {exc.message}",
            url=url,
            status=exc.status_code,
            retries=n,
        )
    if isinstance(exc, ValueError) and str(exc).startswith(NO_STREAM):
        return ChatModelError(
            f"The chat model server at {url} does not stream: it answered a streamed request "
            "(streaming=True) with no server-sent events. Ask it with streaming=False; the call "
            "is not made again unstreamed, which would pay for its reply twice.",
            url=url,
            status=200,
            retries=0,
        )
    if is_malformed(exc):
        n = configured if retries is None else retries
        return ChatModelError(
            f"The chat model server at {url} sent a malformed reply (HTTP 200) after {n} "
            f"retries: {type(exc).__name__}: {exc}",
            url=url,
            status=200,
            retries=n,
        )
    return exc


def server_url(llm: BaseChatModel) -> str | None:
    """The base URL an OpenAI-compatible model talks to, for error messages."""
    is_openai = any(c.__name__ == "ChatOpenAI" for c in type(llm).__mro__)
    return getattr(llm, "openai_api_base", None) or (OPENAI_DEFAULT_URL if is_openai else None)
