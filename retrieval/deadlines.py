"""A request's timeout as a deadline for the whole request, not a wait per socket read.

httpx (and the openai SDK's ``httpx2``) time each socket operation apart: a server that sends
its reply one byte every half second never exceeds a 3 s read timeout, and a call held up
that way ran for minutes (issue 46, item 7). The transports here make the timeout a deadline:
a request attempt ends, with the flavour's ``ReadTimeout`` (the openai SDK's
``APITimeoutError``), once the timeout has passed since it started, whatever the server
drips. The deadline is the largest of the request's timeouts (connect, read, write, pool: one
number, ``$LONGCTX_TIMEOUT``, in every client here); a retried request gets a fresh deadline
per attempt, as the SDK's timeout is per attempt.

* :class:`DeadlineTransport` (sync): stamps the request's deadline on its timeouts
  (:class:`Remaining`) and wraps its pool's network backend so that every connect, read and
  write waits at most what is left of it.
* :class:`AsyncDeadlineTransport` (async, any transport: httpcore's or the SDK's aiohttp
  one): the attempt and each chunk of its reply body run under ``asyncio.timeout_at``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

logger = logging.getLogger(__name__)

#: Bytes written per socket call, so that a server reading slowly meets the deadline too.
WRITE_SLICE = 65536


class Remaining(float):
    """A timeout (its float value) that also carries its request's deadline (``at``,
    monotonic seconds)."""

    at: float

    def __new__(cls, value: float, at: float) -> Remaining:
        self = super().__new__(cls, value)
        self.at = at
        return self


def request_deadline(timeouts: Mapping[str, Any] | None) -> float | None:
    """Seconds the whole request may take: the largest of its timeouts (``None``: no deadline)."""
    values = [float(v) for v in (timeouts or {}).values() if v is not None]
    return max(values) if values else None


def _left(timeout: Any, error: type[Exception]) -> Any:
    """``timeout`` cut to what is left of its request's deadline; ``error`` once nothing is."""
    if not isinstance(timeout, Remaining):
        return timeout
    left = timeout.at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed (its timeout is for the whole request)")
    return min(float(timeout), left)


class _Stream:
    """A sync network stream whose every operation waits at most what is left of the deadline."""

    def __init__(self, inner: Any, core: Any):
        self._inner, self._core = inner, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, _left(timeout, self._core.ReadTimeout))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), WRITE_SLICE):
            chunk = buffer[start : start + WRITE_SLICE]
            self._inner.write(chunk, _left(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: Any = None
    ) -> Any:
        tls = self._inner.start_tls(
            ssl_context, server_hostname, _left(timeout, self._core.ConnectTimeout)
        )
        return _Stream(tls, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """A sync network backend whose connections honour :class:`Remaining` timeouts."""

    def __init__(self, inner: Any, core: Any):
        self._inner, self._core = inner, core

    def connect_tcp(
        self, host: str, port: int, timeout: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        left = _left(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, *args, **kwargs), self._core)

    def connect_unix_socket(self, path: str, timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
        left = _left(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, left, *args, **kwargs), self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport:
    """A sync httpx transport (``HTTPTransport`` of httpx or the SDK's ``httpx2``) whose request
    timeout is a deadline for the whole attempt.

    The deadline needs the transport's httpcore pool (its private ``_pool._network_backend``,
    pinned by ``tests/test_deadlines.py``); a transport without one keeps its timeouts per read,
    with a warning, rather than failing every client made with it.
    """

    def __init__(self, inner: Any):
        pool: Any = getattr(inner, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        self._inner, self._bounded = inner, backend is not None
        if backend is None:
            logger.warning(
                "%s has no network backend to bound: its request timeouts stay per read",
                type(inner).__name__,
            )
        elif not isinstance(backend, _Backend):
            core = sys.modules[type(pool).__module__.split(".")[0]]  # httpcore or httpcore2
            pool._network_backend = _Backend(backend, core)

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` with its timeouts stamped with its deadline (:class:`Remaining`)."""
        timeouts = request.extensions.get("timeout")
        limit = request_deadline(timeouts)
        if limit is not None and self._bounded:
            at = time.monotonic() + limit
            request.extensions["timeout"] = {
                k: None if v is None else Remaining(v, at) for k, v in timeouts.items()
            }
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> DeadlineTransport:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._inner.__exit__(*exc)


class _AsyncBodyBase:
    """A reply body whose every chunk arrives before the request's deadline."""

    def __init__(self, inner: Any, at: float, expired: Any):
        self._inner, self._at, self._expired = inner, at, expired

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._inner.__aiter__()
        while True:
            try:
                async with asyncio.timeout_at(self._at):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise self._expired() from None
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


@functools.cache
def _async_body(httpx: Any) -> Any:
    """:class:`_AsyncBodyBase` as the flavour's ``AsyncByteStream``, as its client requires."""
    return type("_AsyncBody", (_AsyncBodyBase, httpx.AsyncByteStream), {})


class AsyncDeadlineTransport:
    """An async httpx transport (any: httpcore's, the SDK's aiohttp one) whose request timeout is
    a deadline for the whole attempt: the attempt and each chunk of its reply run under
    ``asyncio.timeout_at``; past it, the flavour's ``ReadTimeout`` (``httpx``: the module of
    ``inner``'s client, passed as ``httpx``)."""

    def __init__(self, inner: Any, httpx: Any):
        self._inner, self._httpx = inner, httpx

    async def handle_async_request(self, request: Any) -> Any:
        """Send ``request``; its reply (headers and body) within the request's deadline."""
        limit = request_deadline(request.extensions.get("timeout"))
        if limit is None:
            return await self._inner.handle_async_request(request)
        at = asyncio.get_running_loop().time() + limit

        def expired() -> Exception:
            message = f"no whole reply within the request's deadline ({limit:g} s)"
            error: Exception = self._httpx.ReadTimeout(message, request=request)
            return error

        try:
            async with asyncio.timeout_at(at):
                response = await self._inner.handle_async_request(request)
        except TimeoutError:
            raise expired() from None
        response.stream = _async_body(self._httpx)(response.stream, at, expired)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AsyncDeadlineTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)


def deadline_client(httpx: Any, **options: Any) -> Any:
    """An ``httpx.Client`` of the module ``httpx`` (httpx or the SDK's httpx2) with ``options``,
    its requests bounded by :class:`DeadlineTransport` (``limits`` go to its transport)."""
    transport = httpx.HTTPTransport(limits=options.pop("limits", httpx.Limits()))
    return httpx.Client(transport=DeadlineTransport(transport), **options)


def _flavour(client_class: type) -> Any:
    """The httpx module (``httpx``, or the openai SDK's ``httpx2``) ``client_class``
    derives from."""
    for cls in client_class.__mro__:
        name = cls.__module__.split(".")[0]
        if name in ("httpx", "httpx2"):
            return sys.modules[name]
    raise TypeError(f"{client_class.__name__} is not an httpx client")


def openai_http_client(timeout: Any) -> Any:
    """The openai SDK's default sync client (its limits, redirects, ``timeout``), its requests
    bounded by :class:`DeadlineTransport`: for ``openai.OpenAI(http_client=...)``."""
    import openai

    httpx = _flavour(openai.DefaultHttpxClient)  # httpx2 for openai>=3, else httpx
    transport = httpx.HTTPTransport(limits=openai.DEFAULT_CONNECTION_LIMITS)
    bounded: Any = DeadlineTransport(transport)  # an httpx transport of either flavour
    return openai.DefaultHttpxClient(timeout=timeout, transport=bounded)


def with_async_deadline(client: Any) -> Any:
    """``client`` (an async httpx or httpx2 client, the SDK's aiohttp one too) with its transport
    wrapped in :class:`AsyncDeadlineTransport` (once); returned for chaining."""
    transport = client._transport  # httpx's attribute: a client takes its transport only when made
    if not isinstance(transport, AsyncDeadlineTransport):
        client._transport = AsyncDeadlineTransport(transport, _flavour(type(client)))
    return client


__all__ = [
    "AsyncDeadlineTransport",
    "DeadlineTransport",
    "Remaining",
    "deadline_client",
    "openai_http_client",
    "request_deadline",
    "with_async_deadline",
]
