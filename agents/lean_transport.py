"""Chat Completions posted through a run's own aiohttp session, with the openai SDK's semantics.

Why: at a wide async fan-out the client's CPU, not the server, sets the makespan on a small
machine. Under cProfile the SDK's ``post`` is ~55% of an extraction call's client CPU
(building the ``FinalRequestOptions``, the httpx request, its URL and header objects, then
converting it to aiohttp and the response back), and an extraction fan-out of 250 calls at
32 in flight against a 50 ms server spends longer on the client than on the server
(``benchmarks/bench_structured.py``). This transport sends the same bytes with the
same headers and keeps the SDK's behaviour where it matters, measured against it in
``tests/test_transport_parity.py``:

* **Retries**: ``max_retries`` of the client; connection errors, timeouts and the statuses
  the SDK retries (408, 409, 429, 5xx; the server's ``x-should-retry`` wins), waiting what
  ``retry-after-ms`` / ``retry-after`` ask (up to 120 s; more is not retried) or the SDK's
  schedule (0.5 s doubling to 8 s, minus up to 25% jitter); ``x-stainless-retry-count``
  counts them.
* **Timeouts**: the client's (or the request's) connect and read timeouts, and the largest of
  them as a deadline for each whole attempt (``total``), as :mod:`longctx.retrieval.deadlines` makes
  it for the SDK's own path: a server dripping its reply cannot hold a call past it.
* **Errors**: the SDK's own exceptions (``APITimeoutError``, ``APIConnectionError``, and the
  status errors made by the client itself), so
  :func:`longctx.agents.chat_errors.as_chat_model_error` maps them as before.

It serves only clients whose requests it can reproduce exactly (:meth:`LeanTransport.serves`):
a plain ``openai.AsyncOpenAI`` with a static API key, no default query, no custom auth,
provider runtime or workload identity. Anything else keeps the SDK's path.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import math
import random
import time
import urllib.parse
import urllib.request
from typing import Any

from pydantic import BaseModel

from longctx.retrieval.deadlines import request_deadline

try:  # a LangSmith dependency; declared in pyproject
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]  # encode_body falls back to json

#: Longest server-requested wait honoured (the SDK's ``MAX_RETRY_AFTER_DELAY``); a longer one is not
#: retried.
MAX_RETRY_AFTER = 120.0


def retry_delay(retry: int) -> float:
    """Seconds before retry number ``retry`` (1-based): the openai SDK's schedule, 0.5 s doubling to
    8 s, jittered."""
    return min(0.5 * 2 ** (retry - 1), 8.0) * (1 - 0.25 * random.random())


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_body(body: Any) -> bytes:
    """``body`` as the SDK encodes a JSON request: UTF-8, compact, no NaN, datetimes and pydantic
    models readable.

    orjson writes the same bytes as the SDK's ``json.dumps`` for request payloads (checked on
    every extraction body of the structured benchmark and in ``tests/test_transport_parity.py``)
    in a tenth of the time: ~20 against ~260 microseconds for a 25,000-character prompt, 8% of
    a fan-out's client CPU. It writes NaN as ``null`` where the SDK refuses it, so a payload
    with a non-finite number at its top level (temperature, penalties), a key that is not a
    string or an integer past 64 bits goes through ``json`` as in the SDK.
    """
    if orjson is not None and not any(
        isinstance(v, float) and not math.isfinite(v) for v in body.values()
    ):
        try:
            return orjson.dumps(body, default=_json_default)
        except TypeError:
            pass
    return json.dumps(
        body, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
    ).encode()


def _httpx() -> Any:
    """The httpx flavour the installed SDK builds its requests and responses with."""
    try:
        import httpx2 as httpx
    except ImportError:  # an SDK before its httpx2 vendoring
        import httpx  # type: ignore[no-redef]  # the same API under its own name
    return httpx


def retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``retry-after`` in seconds or as a
    date), or ``None``."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in (
            "inf",
            "+inf",
            "infinity",
            "+infinity",
        ):
            return MAX_RETRY_AFTER + 1  # an overflowing number: too long, not a malformed value
        return delay / divisor
    try:
        parsed = email.utils.parsedate_tz(headers.get("retry-after"))
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def should_retry(status: int, headers: Any) -> bool:
    """Whether a failed status is retried: not when the server asks for too long a wait; its
    ``x-should-retry`` when given; else 408, 409, 429 and 5xx."""
    wait = retry_after(headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER:
        return False
    verdict = headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in (408, 409, 429) or status >= 500


def wait_before(retry: int, headers: Any | None) -> float:
    """Seconds before retry number ``retry`` (1-based): the server's wait when it gives a usable
    one, else the schedule."""
    wait = retry_after(headers) if headers is not None else None
    if wait is not None and math.isfinite(wait) and 0 < wait <= MAX_RETRY_AFTER:
        return wait
    return retry_delay(retry)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``*_proxy``, minus ``no_proxy``), as httpx
    honours it; looked up once per run (aiohttp's ``trust_env`` looks it up in a thread per
    request)."""
    proxies = urllib.request.getproxies()
    if not proxies:
        return None
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def _timeouts(value: Any) -> tuple[float | None, float | None]:
    """``(connect, read)`` seconds of an SDK timeout (a number, an httpx ``Timeout``, or
    ``None``)."""
    if value is None:
        return None, None
    if isinstance(value, (int, float)):
        return float(value), float(value)
    return getattr(value, "connect", None), getattr(value, "read", None)


def _timeout_dict(value: Any) -> dict[str, Any]:
    """An SDK timeout's parts by name (a number stands for all of them)."""
    if isinstance(value, (int, float)):
        return {"read": float(value)}
    return value.as_dict() if hasattr(value, "as_dict") else {}


class LeanTransport:
    """Posts Chat Completions bodies for one SDK client through one aiohttp session (one run's
    pool)."""

    def __init__(self, client: Any, session: Any):
        import aiohttp  # the caller checked it is installed
        from openai._utils import get_async_library

        self.client, self.session, self._aiohttp = client, session, aiohttp
        self.url = str(client.base_url).rstrip("/") + "/chat/completions"
        merged: dict[str, tuple[str, str]] = {}
        # the SDK's order: later wins, Omit removes
        for mapping in (
            client.auth_headers,
            client.default_headers,
        ):
            for name, value in mapping.items():
                if isinstance(value, str):
                    merged[name.lower()] = (name, value)
                else:
                    merged.pop(name.lower(), None)
        merged["x-stainless-async"] = ("X-Stainless-Async", f"async:{get_async_library()}")
        self.headers = dict(merged.values())
        self.max_retries = int(client.max_retries)
        self.timeout = client.timeout
        self.proxy = env_proxy(self.url)

    @staticmethod
    def serves(client: Any) -> bool:
        """Whether requests of ``client`` can be reproduced exactly here (else the SDK sends
        them)."""
        try:
            import aiohttp  # noqa: F401
            import openai
        except ImportError:
            return False
        return (
            type(client) is openai.AsyncOpenAI
            and isinstance(client.api_key, str)
            and not client.default_query
            and getattr(client, "custom_auth", None) is None
            and all(
                getattr(client, name, None) is None
                for name in ("_provider_runtime", "_workload_identity_auth", "_api_key_provider")
            )
            and callable(getattr(client, "_make_status_error_from_response", None))
        )

    def _request_headers(
        self, extra: dict[str, Any] | None, retries: int, read_timeout: float | None
    ) -> dict[str, str]:
        headers = dict(self.headers)
        lowered = {k.lower(): k for k in headers}
        for name, value in (extra or {}).items():
            old = lowered.pop(name.lower(), None)
            if old is not None:
                del headers[old]
            if isinstance(value, str):
                headers[name] = value
                lowered[name.lower()] = name
        custom = {k.lower() for k in extra or {}}
        if "x-stainless-retry-count" not in custom:
            headers["x-stainless-retry-count"] = str(retries)
        if "x-stainless-read-timeout" not in custom and read_timeout is not None:
            headers["x-stainless-read-timeout"] = str(read_timeout)
        return headers

    def _sdk_request(self, headers: dict[str, str], data: bytes) -> Any:
        return _httpx().Request("POST", self.url, headers=headers, content=data)

    async def post(self, body: dict[str, Any], options: dict[str, Any]) -> bytes:
        """The reply body of ``POST /chat/completions`` with ``body`` (``options``: the SDK's
        ``headers``, ``timeout``; ``params`` is not served here).

        Raises:
            openai.APITimeoutError, openai.APIConnectionError: no reply after the retries.
            openai.APIStatusError: an error status (the SDK's subclass for it) not retried or after
                the retries.
        """
        import openai

        if options.get("params"):
            raise ValueError("query parameters are sent by the SDK's path")
        data = encode_body(body)
        connect, read = _timeouts(options.get("timeout", self.timeout))
        total = request_deadline(_timeout_dict(options.get("timeout", self.timeout)))
        timeout = self._aiohttp.ClientTimeout(total=total, sock_connect=connect, sock_read=read)
        retry = 0
        while True:
            headers = self._request_headers(options.get("headers"), retry, read)
            wait_headers = None
            try:
                async with self.session.post(
                    self.url, data=data, headers=headers, timeout=timeout, proxy=self.proxy
                ) as response:
                    content = await response.read()
                    if response.status < 400:
                        return content
                    if retry >= self.max_retries or not should_retry(
                        response.status, response.headers
                    ):
                        failed = _httpx().Response(
                            response.status,
                            headers=list(response.headers.items()),
                            content=content,
                            request=self._sdk_request(headers, data),
                        )
                        raise _made(
                            self.client._make_status_error_from_response(failed), retry
                        ) from None
                    wait_headers = response.headers
            except asyncio.TimeoutError as exc:
                if retry >= self.max_retries:
                    raise _made(
                        openai.APITimeoutError(request=self._sdk_request(headers, data)), retry
                    ) from exc
            except self._aiohttp.ClientError as exc:
                if retry >= self.max_retries:
                    raise _made(
                        openai.APIConnectionError(request=self._sdk_request(headers, data)), retry
                    ) from exc
            retry += 1
            await asyncio.sleep(wait_before(retry, wait_headers))


def _made(error: BaseException, retries: int) -> BaseException:
    """``error`` noting the retries actually made (``retries_made``), which the SDK's errors do not
    carry: :func:`longctx.agents.chat_errors.as_chat_model_error` reports it instead of the
    configured count."""
    setattr(error, "retries_made", retries)  # an attribute of our own on the SDK's exception
    return error


__all__ = [
    "LeanTransport",
    "MAX_RETRY_AFTER",
    "encode_body",
    "env_proxy",
    "retry_after",
    "retry_delay",
    "should_retry",
    "wait_before",
]
