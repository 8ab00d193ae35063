"""``RetryingChatOpenAI``: LangChain's ``ChatOpenAI`` with our retries, errors, budget field and
lean requests.

A module of its own so that ``langchain_openai`` and the openai SDK (about 0.5 s of imports)
load only when an ``openai:`` model is made: :func:`longctx.agents.chat_models.make_chat_model`
imports it on first use, and ``import longctx`` never does.

The class overrides private ``ChatOpenAI`` members (``_create_chat_result``,
``_convert_chunk_to_generation_chunk``, ``_get_request_payload``, ``_generate``,
``_agenerate``, ``_stream``, ``_astream``; ``_get_llm_string`` comes from LangChain's
``BaseChatModel``) and calls others (``_use_responses_api``, ``_ensure_sync_client_available``).
Private members change without notice, so ``tests/test_openai_chat.py`` pins the signatures this
module relies on and ``pyproject.toml`` pins the langchain-openai versions they were checked
against.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr

from longctx.agents.cached_usage import with_cached_tokens
from longctx.agents.chat_errors import (
    MalformedResponseError,
    as_chat_model_error,
    is_malformed,
    max_retries_setting,
)
from longctx.agents.lean_transport import LeanTransport, retry_delay
from longctx.graphs.metering.budget_field import budget_field, with_budget_field
from longctx.graphs.runtime.twins import blocking, run_blocking
from longctx.retrieval.reported_usage import checked_chat_usage

#: A request for :meth:`RetryingChatOpenAI._complete`'s ``send``: ``post`` arguments of the lean
#: path, or ``None`` for ChatOpenAI's own path.
LeanRequest = dict[str, Any] | None


class RetryingChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose malformed replies are retried like 5xx and whose failures are
    :class:`~agents.chat_errors.ChatModelError`; serialized (and so cached) as plain
    ``ChatOpenAI``."""

    _transport: Any = PrivateAttr(default=None)
    #: Its payload goes through ``with_budget_field``:
    #: ``longctx.graphs.metering.budget_field.budget_kwargs`` sends it a plain ``max_tokens``.
    applies_budget_field: ClassVar[bool] = True

    @classmethod
    def lc_id(cls) -> list[str]:
        return ChatOpenAI.lc_id()

    def use_http_session(self, session: Any) -> bool:
        """Post async Chat Completions calls through ``session`` (an aiohttp session owned by
        one run, see :func:`longctx.graphs.calls.llm.run_client`) when :class:`LeanTransport` can
        reproduce this model's requests; whether it will."""
        if not LeanTransport.serves(self.root_async_client):
            return False
        self._transport = LeanTransport(self.root_async_client, session)
        return True

    def _server(self) -> str:
        """The server and model a reply came from, as a warning about its usage names them."""
        client = self.root_async_client or self.root_client
        return f"the chat server at {getattr(client, 'base_url', '?')} (model {self.model_name})"

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        if isinstance(response, dict):
            error, choices = response.get("error"), response.get("choices")
            messages = [c.get("message") if isinstance(c, dict) else None for c in choices or []]
        elif hasattr(response, "choices"):  # the SDK's parsed model
            error, choices = getattr(response, "error", None), response.choices
            messages = [getattr(c, "message", None) for c in choices or []]
        else:
            raise MalformedResponseError(f"the reply is not a JSON object: {str(response)[:200]!r}")
        if not error:  # an error body is ChatOpenAI's to report
            if not choices:
                raise MalformedResponseError(f"the reply has no choices (choices={choices!r})")
            if any(m is None for m in messages):
                raise MalformedResponseError("a choice of the reply has no message")
        if isinstance(response, dict):
            usage = checked_chat_usage(response.get("usage"), self._server())
            response, timings = {**response, "usage": usage}, response.get("timings")
        else:  # the SDK keeps fields it does not know (llama.cpp's timings) as extras
            raw_usage: Any = getattr(response, "usage", None)
            usage = checked_chat_usage(
                raw_usage.model_dump(warnings=False)
                if hasattr(raw_usage, "model_dump")
                else raw_usage,
                self._server(),
            )
            response = response.model_copy(update={"usage": usage})
            timings = (getattr(response, "model_extra", None) or {}).get("timings")
        result = super()._create_chat_result(response, generation_info)
        for generation in result.generations:
            with_cached_tokens(getattr(generation, "message", None), usage, timings)
        return result

    def _convert_chunk_to_generation_chunk(
        self, chunk: dict, default_chunk_class: type, base_generation_info: dict | None
    ) -> ChatGenerationChunk | None:
        """ChatOpenAI's chunk of a streamed reply, with the cached prompt tokens its usage (the last
        chunk's, ``stream_usage``) reports under a vendor's own name or in llama.cpp's ``timings``
        (:func:`~agents.cached_usage.with_cached_tokens`): a streamed answer counts what a whole
        reply does."""
        if chunk.get("usage") is not None:
            chunk = {**chunk, "usage": checked_chat_usage(chunk["usage"], self._server())}
        generation = super()._convert_chunk_to_generation_chunk(
            chunk, default_chunk_class, base_generation_info
        )
        if generation is not None and chunk.get("usage"):
            with_cached_tokens(generation.message, chunk["usage"], chunk.get("timings"))
        return generation

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict:
        """ChatOpenAI's payload with the answer budget under the field the model honours
        (:func:`~graphs.metering.budget_field.budget_field`); both request paths, lean and SDK,
        build their body here."""
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        if "messages" not in payload:  # the Responses API names its budget max_output_tokens
            return payload
        return with_budget_field(payload, payload.get("model") or self.model_name)

    def _get_llm_string(self, stop: list[str] | None = None, **kwargs: Any) -> str:
        """LangChain's cache key, plus the budget's field where it is ``max_tokens``: replies
        cached while the budget went out as ``max_completion_tokens`` (ignored by some
        servers) are not replayed for the request that now carries it."""
        key = super()._get_llm_string(stop=stop, **kwargs)
        field = budget_field(kwargs.get("model") or self.model_name)
        has_budget = (
            kwargs.get("max_tokens") is not None
            or kwargs.get("max_completion_tokens") is not None
            or self.max_tokens is not None
        )
        return f"{key}---budget_field={field}" if has_budget and field == "max_tokens" else key

    def _lean_request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> LeanRequest:
        """``post`` arguments for a plain Chat Completions call, or ``None`` for ChatOpenAI's own
        path.

        ChatOpenAI sends the same payload through ``chat.completions.create``, which walks
        every message through the SDK's parameter transform and parses the reply into
        pydantic models (about 1 ms of CPU per call, the bound of a wide judge fan-out:
        ``benchmarks/bench_pai.py``). The payload needs neither, so it is posted as
        built and the reply read as JSON: same body, same retries, timeouts and errors (the
        SDK's request loop), about 40% less client CPU. Streaming, structured-output
        ``response_format``, the Responses API and response headers keep ChatOpenAI's path.
        """
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if (
            payload.get("stream")
            or "response_format" in payload
            or self.include_response_headers
            or self._use_responses_api(payload)
        ):
            return None
        options: dict[str, Any] = {}
        if "extra_headers" in payload:
            options["headers"] = payload.pop("extra_headers")
        if "extra_query" in payload:
            options["params"] = payload.pop("extra_query")
        if "timeout" in payload:
            options["timeout"] = payload.pop("timeout")
        payload.update(payload.pop("extra_body", None) or {})
        return {"body": payload, "options": options}

    async def _complete(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        send: Callable[[LeanRequest], Awaitable[Any]],
        pause: Callable[[float], Awaitable[Any]],
    ) -> ChatResult:
        """One completion under the policy :meth:`_generate` and :meth:`_agenerate` share
        (:mod:`longctx.graphs.runtime.twins`).

        ``send(request)`` posts a lean request and returns the reply's bytes, or, for ``None``,
        runs ChatOpenAI's own path and returns its result. A malformed reply is retried after
        :func:`~agents.lean_transport.retry_delay` (``pause``), up to ``max_retries`` times
        (``$LONGCTX_MAX_RETRIES`` when unset); a failure is raised as a ``ChatModelError``.
        """
        retry = 0
        while True:
            try:
                request = self._lean_request(messages, stop, kwargs)
                reply = await send(request)
                return reply if request is None else self._create_chat_result(json.loads(reply))
            except Exception as exc:
                if is_malformed(exc) and retry < (
                    max_retries_setting() if self.max_retries is None else self.max_retries
                ):
                    retry += 1
                    await pause(retry_delay(retry))
                    continue
                mapped = as_chat_model_error(
                    exc, self, retries=retry if is_malformed(exc) else None
                )
                if mapped is exc:
                    raise
                raise mapped from exc

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        generate = super()._generate

        def send(request: LeanRequest) -> Any:
            if request is None:
                return generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            self._ensure_sync_client_available()
            return self.root_client.post("/chat/completions", cast_to=bytes, **request)

        return run_blocking(
            self._complete(messages, stop, kwargs, blocking(send), blocking(time.sleep))
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        agenerate = super()._agenerate

        async def send(request: LeanRequest) -> Any:
            if request is None:
                return await agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
            if self._transport is not None and not request["options"].get("params"):
                return await self._transport.post(request["body"], request["options"])
            return await self.root_async_client.post("/chat/completions", cast_to=bytes, **request)

        return await self._complete(messages, stop, kwargs, send, asyncio.sleep)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        """ChatOpenAI's streamed reply, its failures (a timeout, an error status) raised as the
        ``ChatModelError`` a whole reply's would be
        (:func:`~agents.chat_errors.as_chat_model_error`)."""
        try:
            yield from super()._stream(*args, **kwargs)
        except Exception as exc:
            if (mapped := as_chat_model_error(exc, self)) is exc:
                raise
            raise mapped from exc

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        """:meth:`_stream` for async code: the same chunks, the same errors."""
        try:
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
        except Exception as exc:
            if (mapped := as_chat_model_error(exc, self)) is exc:
                raise
            raise mapped from exc


# LangChain asks ``inspect.signature(self._agenerate)`` on every call whether it takes a
# run manager (~14 us of a ~300 us call); the signature is fixed, so it is computed once.
for _method in (RetryingChatOpenAI._generate, RetryingChatOpenAI._agenerate):
    # functions take attributes; mypy does not model it
    setattr(_method, "__signature__", inspect.signature(_method))


__all__ = ["RetryingChatOpenAI"]
